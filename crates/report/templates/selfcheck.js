window.addEventListener('load', function () {
  var problems = window.__kvbenchErrors.slice();
  var figures = document.querySelectorAll('figure.chart');
  figures.forEach(function (f) {
    var name = f.getAttribute('data-cell') || f.getAttribute('data-client') || f.id;
    var svg = f.querySelector('svg');
    if (!svg) { problems.push('no svg in chart ' + name); return; }
    var box = svg.getBoundingClientRect();
    if (!(box.width > 0 && box.height > 0)) problems.push('chart not laid out: ' + name);
    var bars = svg.querySelectorAll('rect.bar');
    var want = parseInt(f.getAttribute('data-bars'), 10);
    if (bars.length !== want) problems.push('chart ' + name + ': ' + bars.length + ' bars, expected ' + want);
    bars.forEach(function (r) {
      var b = r.getBBox();
      if (!(b.width > 0 && b.height > 0)) problems.push('empty bar in chart ' + name);
    });
  });
  // Every table cell's content at least 3em wide, closed cost tables included: a squeezed column (one
  // character per line) is a layout bug even where nothing overflows.
  var closed = Array.prototype.filter.call(document.querySelectorAll('details'), function (d) { return !d.open; });
  closed.forEach(function (d) { d.open = true; });
  var narrow = 0, first = '';
  document.querySelectorAll('table td, table th').forEach(function (cell) {
    if (!cell.getClientRects().length) return;
    // The content box: a column squeezed to a few characters still has its padding.
    var style = getComputedStyle(cell);
    var width = cell.getBoundingClientRect().width - parseFloat(style.paddingLeft) -
      parseFloat(style.paddingRight) - parseFloat(style.borderLeftWidth) - parseFloat(style.borderRightWidth);
    if (width < 3 * parseFloat(style.fontSize) - 0.5) {
      if (!narrow) {
        var table = cell.closest('table');
        var where = table.id || (table.closest('section') || {}).id || 'a table';
        first = where + ' (' + JSON.stringify(cell.textContent.trim().slice(0, 40)) + ')';
      }
      narrow += 1;
    }
  });
  closed.forEach(function (d) { d.open = false; });
  if (narrow) problems.push(narrow + ' table cells narrower than 3em, first in ' + first);
  var expected = parseInt(document.body.getAttribute('data-charts'), 10);
  if (figures.length !== expected) problems.push(figures.length + ' charts, expected ' + expected);
  var out = document.getElementById('selfcheck');
  out.setAttribute('data-status', problems.length ? 'fail' : 'ok');
  out.textContent = problems.length
    ? 'page self-check failed: ' + problems.join('; ')
    : 'page self-check ok: ' + figures.length + ' charts laid out, no table cell under 3em, no script errors';
});
