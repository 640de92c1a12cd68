window.__kvbenchErrors = [];
window.addEventListener('error', function (e) {
  var t = e.target;
  if (t && t !== window && (t.src || t.href)) {
    window.__kvbenchErrors.push('failed to load ' + (t.src || t.href));
  } else {
    window.__kvbenchErrors.push('script error: ' + (e.message || String(e)));
  }
}, true);
(function () {
  var original = console.error;
  console.error = function () {
    window.__kvbenchErrors.push('console.error: ' + Array.prototype.join.call(arguments, ' '));
    return original.apply(console, arguments);
  };
})();
