// Progressive enhancement for round forms: the browser checks answers
// before they are sent, and a declined or cancelled question's fields are
// set aside. Without this script the server checks everything instead.
(function () {
  "use strict";
  function sync(form) {
    form.querySelectorAll("[data-answer-fields]").forEach(function (box) {
      var name = box.getAttribute("data-answer-fields");
      var chosen = form.querySelector('input[type=radio][name="' + CSS.escape(name) + '"]:checked');
      var off = chosen && chosen.value !== "accept";
      box.querySelectorAll("input, select, textarea").forEach(function (el) { el.disabled = off; });
    });
  }
  function init() {
    document.querySelectorAll("form[data-testid=round-form]").forEach(function (form) {
      form.querySelectorAll("[data-round-submit]").forEach(function (b) { b.removeAttribute("formnovalidate"); });
      form.addEventListener("change", function () { sync(form); });
      sync(form);
    });
    var summary = document.getElementById("error-summary");
    if (summary) { summary.focus(); }
  }
  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", init); } else { init(); }
  document.addEventListener("htmx:afterSettle", init);
})();
