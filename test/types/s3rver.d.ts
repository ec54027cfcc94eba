// s3rver ships no type declarations; this covers the part the tests use.
declare module 's3rver' {
  import type { AddressInfo } from 'node:net';

  interface S3rverOptions {
    port?: number;
    address?: string;
    silent?: boolean;
    directory?: string;
    resetOnClose?: boolean;
    allowMismatchedSignatures?: boolean;
    vhostBuckets?: boolean;
    serviceEndpoint?: string;
    configureBuckets?: Array<{ name: string; configs?: Array<string | Buffer> }>;
  }

  class S3rver {
    constructor(options?: S3rverOptions);
    /** Resolves with the bound address once the configured buckets exist. */
    run(): Promise<AddressInfo>;
    close(): Promise<void>;
    reset(): void;
  }

  export = S3rver;
}
