// The console's only script: every element with data-refresh="<url>" is reloaded from that
// same-origin URL every data-every seconds (a server-rendered, escaped HTML fragment). No
// eval, no inline script, no third-party code: the CSP allows this file and nothing else.
"use strict";
window.consoleRefresh = function (region) {
  return fetch(region.dataset.refresh, { credentials: "same-origin", headers: { Accept: "text/html" } })
    .then(function (answer) { return answer.ok ? answer.text() : null; })
    .then(function (html) { if (html !== null) { region.innerHTML = html; } })
    .catch(function () { /* the next tick tries again */ });
};
document.querySelectorAll("[data-refresh]").forEach(function (region) {
  var every = Math.max(5, Number(region.dataset.every || 60)) * 1000;
  setInterval(function () { window.consoleRefresh(region); }, every);
});
