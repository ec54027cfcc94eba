// The console's only script: live progress on a running batch's page, over server-sent events.
// Everything else works without it. When the batch ends, the page reloads to show how it ended.
(function () {
  'use strict';
  var section = document.querySelector('[data-events]');
  if (!section || typeof EventSource === 'undefined') return;
  var source = new EventSource(section.getAttribute('data-events'));
  var set = function (selector, text) {
    var el = document.querySelector(selector);
    if (el) el.textContent = text;
  };
  var number = function (n) { return Number(n).toLocaleString('en-GB'); };
  source.addEventListener('progress', function (event) {
    var d = JSON.parse(event.data);
    set('[data-live="state"]', d.state);
    set('[data-live="succeeded"]', number(d.succeeded));
    set('[data-live="failed"]', number(d.failed));
    set('[data-live="rate"]', d.rate >= 10 ? d.rate.toFixed(0) : d.rate.toFixed(1));
    set('[data-live="chart-total"]', number(d.succeeded));
    set('[data-live="chart-span"]', String(Math.round(d.chart.span_s)));
    var line = document.querySelector('[data-live="chart"]');
    if (line) line.setAttribute('points', d.chart.points);
    Object.keys(d.stages).forEach(function (stage) {
      var row = document.querySelector('[data-stage="' + stage + '"]');
      if (!row) return;
      var c = d.stages[stage];
      var bar = row.querySelector('progress');
      if (bar) bar.value = c.completed;
      ['completed', 'failed', 'waiting', 'active', 'delayed'].forEach(function (k) {
        var cell = row.querySelector('[data-k="' + k + '"]');
        if (cell) cell.textContent = String(c[k]);
      });
      var pct = row.querySelector('[data-k="pct"]');
      if (pct) pct.textContent = (d.total > 0 ? Math.floor((c.completed / d.total) * 100) : 0) + '%';
    });
    if (d.finished) {
      source.close();
      window.location.reload();
    }
  });
})();
