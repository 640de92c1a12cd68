window.addEventListener('load', function () {
  var problems = window.__kvbenchErrors.slice();
  var figures = document.querySelectorAll('figure.chart');
  figures.forEach(function (f) {
    var name = f.getAttribute('data-cell') || f.getAttribute('data-client') || f.id;
    var svgs = f.querySelectorAll('svg');
    if (!svgs.length) { problems.push('no svg in chart ' + name); return; }
    // Each count the page was rendered with from results.json against what was drawn: a bar per
    // measured client, a line per client of a callers chart and a point per measured C.
    var count = function (element, attribute, selector) {
      if (!element.hasAttribute(attribute)) return;
      var found = element.querySelectorAll(selector).length, want = parseInt(element.getAttribute(attribute), 10);
      if (found !== want) problems.push('chart ' + name + ': ' + found + ' ' + selector + ', expected ' + want);
    };
    count(f, 'data-bars', 'rect.bar');
    svgs.forEach(function (svg) {
      var box = svg.getBoundingClientRect();
      if (!(box.width > 0 && box.height > 0)) problems.push('chart not laid out: ' + name);
      count(svg, 'data-lines', 'g.line');
      count(svg, 'data-points', 'circle.point');
      count(svg, 'data-work', 'rect.work');
    });
    f.querySelectorAll('rect.bar, rect.work, circle.point').forEach(function (r) {
      var b = r.getBBox();
      if (!(b.width > 0 && b.height > 0)) problems.push('empty mark in chart ' + name);
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
