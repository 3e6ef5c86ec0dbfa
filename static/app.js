// Progressive enhancement for round forms: the browser checks answers
// before they are sent, a declined or cancelled question's fields are set
// aside, and what is typed is saved as a draft as it changes. Without this
// script the server checks everything, and "Save draft" saves.
(function () {
  "use strict";
  if (window.roundsApp) { return; } // htmx may bring this script in again
  window.roundsApp = true;

  // setAside lists the controls of questions not being answered.
  function setAside(form) {
    var out = [];
    form.querySelectorAll("[data-answer-fields]").forEach(function (box) {
      var name = box.getAttribute("data-answer-fields");
      var chosen = form.querySelector('input[type=radio][name="' + CSS.escape(name) + '"]:checked');
      if (chosen && chosen.value !== "accept") {
        box.querySelectorAll("input, select, textarea").forEach(function (el) { out.push(el); });
      }
    });
    return out;
  }
  function sync(form) {
    var aside = setAside(form);
    form.querySelectorAll("[data-answer-fields] input, [data-answer-fields] select, [data-answer-fields] textarea")
      .forEach(function (el) { el.disabled = aside.indexOf(el) >= 0; });
  }
  function status(form, text) {
    var el = form.querySelector("[data-draft-status]");
    if (el) { el.textContent = text; }
  }
  function init() {
    document.querySelectorAll("form[data-testid=round-form]").forEach(function (form) {
      if (form.dataset.roundsReady) { return; }
      form.dataset.roundsReady = "1";
      form.querySelectorAll("[data-round-submit]").forEach(function (b) { b.removeAttribute("formnovalidate"); });
      form.addEventListener("change", function () { sync(form); });
      // A draft keeps what was typed into set-aside fields too, should the
      // person change their mind.
      form.addEventListener("submit", function (e) {
        if (e.submitter && e.submitter.hasAttribute("data-draft-submit")) {
          setAside(form).forEach(function (el) { el.disabled = false; });
        }
      });
      sync(form);
    });
    var summary = document.getElementById("error-summary");
    if (summary && !summary.dataset.focused) {
      summary.dataset.focused = "1";
      summary.focus();
    }
  }
  // "Draft saved." means saved as it is now: each edit is counted (before
  // htmx sees it, in the capture phase), each draft notes the count it was
  // taken at, and only a draft taken after the last edit says so.
  function edited(e) {
    var form = e.target.form;
    if (!form || !form.matches("form[data-draft-form]")) { return; }
    form.roundsEdits = (form.roundsEdits || 0) + 1;
    status(form, "");
  }
  document.addEventListener("input", edited, true);
  document.addEventListener("change", edited, true);
  document.addEventListener("htmx:configRequest", function (e) {
    var form = e.detail.elt;
    if (!form.matches || !form.matches("form[data-draft-form]")) { return; }
    e.detail.roundsEdits = form.roundsEdits || 0;
    setAside(form).forEach(function (el) {
      if (!el.name || ((el.type === "checkbox" || el.type === "radio") && !el.checked)) { return; }
      if (el.tagName === "SELECT" && el.multiple) {
        Array.prototype.forEach.call(el.selectedOptions, function (o) { e.detail.formData.append(el.name, o.value); });
        return;
      }
      e.detail.formData.append(el.name, el.value);
    });
    e.detail.errors = []; // a draft is saved unchecked, half-typed or not
  });
  document.addEventListener("htmx:afterRequest", function (e) {
    var form = e.detail.elt;
    if (!form.matches || !form.matches("form[data-draft-form]")) { return; }
    if (e.detail.successful) {
      if (e.detail.requestConfig && e.detail.requestConfig.roundsEdits === (form.roundsEdits || 0)) {
        status(form, "Draft saved.");
      }
    } else if (!e.detail.xhr || e.detail.xhr.status !== 0) {
      status(form, "The draft could not be saved.");
    }
  });
  // A link of the error summary puts the cursor in the control it names,
  // not only the page at it, so that the keyboard can fix it at once.
  document.addEventListener("click", function (e) {
    var link = e.target.closest && e.target.closest('#error-summary a[href^="#"]');
    var target = link && document.getElementById(link.getAttribute("href").slice(1));
    if (!target) { return; }
    var control = target.matches("input, select, textarea") ? target
      : target.querySelector("input:checked, input:not([type=hidden]), select, textarea");
    if (!control) { return; }
    e.preventDefault();
    target.scrollIntoView({ block: "center" });
    control.focus();
    if (e.detail === 0) {
      // Opened with Enter: the rest of that keystroke is not for the
      // control, where it would send the form.
      var swallow = function (k) { if (k.key === "Enter") { k.preventDefault(); } };
      control.addEventListener("keypress", swallow, { once: true });
      document.addEventListener("keyup", function () { control.removeEventListener("keypress", swallow); }, { once: true });
    }
  });
  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", init); } else { init(); }
  document.addEventListener("htmx:afterSettle", init);
})();
