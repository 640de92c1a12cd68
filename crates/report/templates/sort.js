(function () {
  function key(cell, numeric) {
    if (!cell) return null;
    if (numeric) {
      var v = cell.getAttribute('data-v');
      if (v === null || v === '') return null;
      var n = parseFloat(v);
      return isNaN(n) ? null : n;
    }
    return cell.textContent.trim().toLowerCase();
  }
  function sort(table, th, col) {
    var numeric = th.getAttribute('data-type') === 'num';
    var current = th.getAttribute('aria-sort');
    var ascending = current ? current === 'descending' : !numeric;
    table.querySelectorAll('thead th').forEach(function (h) { h.removeAttribute('aria-sort'); });
    th.setAttribute('aria-sort', ascending ? 'ascending' : 'descending');
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = key(a.cells[col], numeric), y = key(b.cells[col], numeric);
      if (x === null && y === null) return 0;
      if (x === null) return 1;
      if (y === null) return -1;
      var c = x < y ? -1 : x > y ? 1 : 0;
      return ascending ? c : -c;
    });
    rows.forEach(function (r) { body.appendChild(r); });
  }
  var nav = document.getElementById('nav');
  var details = document.querySelectorAll('details.cost');
  if (nav && details.length) {
    var button = document.createElement('button');
    button.type = 'button';
    button.textContent = 'open all cost tables';
    button.addEventListener('click', function () {
      var open = button.textContent.indexOf('open') === 0;
      details.forEach(function (d) { d.open = open; });
      button.textContent = (open ? 'close' : 'open') + ' all cost tables';
    });
    nav.appendChild(button);
  }
  document.querySelectorAll('table.sortable').forEach(function (table) {
    table.querySelectorAll('thead th').forEach(function (th, col) {
      th.tabIndex = 0;
      th.title = 'sort';
      th.addEventListener('click', function () { sort(table, th, col); });
      th.addEventListener('keydown', function (e) {
        if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); sort(table, th, col); }
      });
    });
  });
})();
