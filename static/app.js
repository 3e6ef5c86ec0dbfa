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
  // At the swap itself, not only after settling: a form must never be seen
  // with its new fields but without its checks.
  document.addEventListener("htmx:afterSwap", init);
  document.addEventListener("htmx:afterSettle", init);

  // --- The person's time zone, the send button's words, Ctrl/Cmd+Enter,
  // and a round that ended while its page was open.

  // The browser's time zone goes to the server in a cookie, so that every
  // page shows times in it (unless the account page sets another).
  var zone = "";
  try { zone = Intl.DateTimeFormat().resolvedOptions().timeZone || ""; } catch (e) { zone = ""; }
  if (/^[A-Za-z][A-Za-z0-9_+\-]*(\/[A-Za-z0-9_+\-]+)*$/.test(zone) && document.cookie.split("; ").indexOf("tz=" + zone) < 0) {
    document.cookie = "tz=" + zone + "; path=/; max-age=31536000; SameSite=Lax" + (location.protocol === "https:" ? "; Secure" : "");
  }
  // A form drawn before the server knew the zone takes times in the
  // browser's, as long as none was typed in the old one.
  function adoptZone(root) {
    var html = document.documentElement;
    if (!zone || html.getAttribute("data-tz-source") === "account" || html.getAttribute("data-tz") === zone) { return; }
    root.querySelectorAll("[data-tz-input]").forEach(function (input) {
      var fields = input.closest(".question-fields") || input.form;
      var typed = fields && Array.prototype.some.call(fields.querySelectorAll("input[type=datetime-local]"), function (el) { return el.value !== ""; });
      if (typed) { return; }
      input.value = zone;
      var label = fields.querySelector("[data-tz-label]");
      if (label) { label.textContent = zone; }
    });
  }

  // The send button of a round of several questions says what it will do.
  function plural(n, one, many) { return n + " " + (n === 1 ? one : many); }
  function sendLabel(form) {
    var button = form.querySelector("[data-round-submit][data-label-live]");
    if (!button) { return; }
    var count = { accept: 0, decline: 0, cancel: 0 };
    form.querySelectorAll("fieldset.choice").forEach(function (set) {
      var chosen = set.querySelector("input[type=radio]:checked");
      if (chosen && count.hasOwnProperty(chosen.value)) { count[chosen.value]++; }
    });
    var parts = [];
    if (count.accept) { parts.push("send " + plural(count.accept, "answer", "answers")); }
    if (count.decline) { parts.push("decline " + count.decline); }
    if (count.cancel) { parts.push("cancel " + count.cancel); }
    var text = parts.length ? parts.join(", ") : "send";
    button.textContent = text.charAt(0).toUpperCase() + text.slice(1);
  }
  function enhance() {
    adoptZone(document);
    document.querySelectorAll("form[data-testid=round-form]").forEach(function (form) {
      sendLabel(form);
      if (form.dataset.roundsKeys) { return; }
      form.dataset.roundsKeys = "1";
      form.addEventListener("change", function () { sendLabel(form); });
      form.querySelectorAll("[data-shortcut]").forEach(function (el) {
        el.textContent = /Mac|iPhone|iPad/.test(navigator.platform || "") ? "⌘+Enter sends." : "Ctrl+Enter sends.";
        el.hidden = false;
      });
    });
    document.querySelectorAll("[data-round-gone]").forEach(gone);
  }
  document.addEventListener("keydown", function (e) {
    if (e.key !== "Enter" || !(e.ctrlKey || e.metaKey)) { return; }
    var form = e.target.form;
    if (!form || !form.matches("form[data-testid=round-form]") || form.dataset.gone) { return; }
    var send = form.querySelector("[data-round-submit]");
    if (!send) { return; }
    e.preventDefault();
    form.requestSubmit(send);
  });
  // The round ended elsewhere: nothing can be sent, and nothing typed is
  // thrown away: the fields stay as they are, to copy from.
  function gone(note) {
    var form = document.querySelector("form[data-testid=round-form]");
    if (!form || form.dataset.gone) { return; }
    form.dataset.gone = "1";
    form.querySelectorAll("button").forEach(function (b) { b.disabled = true; });
    form.querySelectorAll("input:not([type=hidden]), textarea").forEach(function (el) { el.readOnly = true; });
    form.removeAttribute("data-draft-form");
    var status = form.querySelector("[data-draft-status]");
    if (status) { status.textContent = ""; }
  }
  document.addEventListener("htmx:beforeRequest", function (e) {
    var form = e.detail.elt;
    if (form && form.dataset && form.dataset.gone && form.matches("form[data-testid=round-form]")) { e.preventDefault(); }
  });
  // The tab's title starts with the number of waiting rounds, as the
  // navigation shows it; a change to the page's call asks for it anew.
  function titleCount() {
    var box = document.getElementById("inbox-count-box");
    if (!box) { return; }
    var n = parseInt(box.getAttribute("data-count"), 10) || 0;
    var bare = document.title.replace(/^\(\d+\) /, "");
    document.title = n > 0 ? "(" + n + ") " + bare : bare;
  }
  document.addEventListener("htmx:afterSettle", function (e) {
    var target = e.detail && e.detail.target;
    var ended = document.querySelector("[data-round-gone]");
    if (target && (target.id === "call" || (ended && !ended.dataset.counted))) {
      if (ended) { ended.dataset.counted = "1"; }
      document.body.dispatchEvent(new Event("roundsChanged"));
    }
    titleCount();
  });

  // --- Character counters and Copy buttons.

  // A length-limited field counts its characters (as the server counts
  // them: code points) as they are typed. The count is shown at once and
  // said to screen readers once typing pauses.
  function countText(el) {
    var n = Array.from(el.value).length;
    var min = el.minLength > 0 ? el.minLength : 0, max = el.maxLength >= 0 ? el.maxLength : -1;
    var text = max >= 0 ? n + " of " + max + " characters" : plural(n, "character", "characters");
    if (max >= 0 && n > max) { return text + ": " + (n - max) + " too many"; }
    if (n < min) { return text + ", at least " + min; }
    return text;
  }
  function counters(root) {
    root.querySelectorAll("[data-counter-for]").forEach(function (box) {
      var el = document.getElementById(box.getAttribute("data-counter-for"));
      if (!el || box.dataset.counting) { return; }
      box.dataset.counting = "1";
      var live = root.querySelector('[data-counter-live="' + CSS.escape(el.id) + '"]');
      var timer = 0;
      var update = function () {
        box.textContent = countText(el);
        box.classList.toggle("counter-over", (el.maxLength >= 0 && Array.from(el.value).length > el.maxLength) ||
          (el.value !== "" && Array.from(el.value).length < el.minLength));
        clearTimeout(timer);
        if (live) { timer = setTimeout(function () { live.textContent = box.textContent; }, 1000); }
      };
      el.addEventListener("input", update);
      update();
      if (live) { clearTimeout(timer); }
      box.hidden = false;
    });
  }
  // A Copy button copies the text of the element it names. Without
  // JavaScript it stays hidden, and the text is there to select.
  function copyButtons(root) {
    root.querySelectorAll("button[data-copy]").forEach(function (b) {
      if (b.dataset.copyReady) { return; }
      b.dataset.copyReady = "1";
      b.hidden = false;
    });
  }
  function said(button, text) {
    var note = button.parentNode.querySelector("[data-copy-status]");
    if (note) { note.textContent = text; }
    clearTimeout(button.roundsTimer);
    button.roundsTimer = setTimeout(function () { if (note) { note.textContent = ""; } }, 4000);
  }
  document.addEventListener("click", function (e) {
    var button = e.target.closest && e.target.closest("button[data-copy]");
    if (!button) { return; }
    var source = document.getElementById(button.getAttribute("data-copy"));
    if (!source) { return; }
    var text = "value" in source && source.tagName !== "PRE" ? source.value : source.textContent;
    var fallback = function () {
      // Select the text, so the person can copy it themselves if the
      // browser will not.
      var range = document.createRange();
      range.selectNodeContents(source);
      var sel = window.getSelection();
      sel.removeAllRanges();
      sel.addRange(range);
      var ok = false;
      try { ok = document.execCommand("copy"); } catch (err) { ok = false; }
      said(button, ok ? "Copied." : "Selected: press Ctrl+C (⌘+C) to copy.");
    };
    if (navigator.clipboard && navigator.clipboard.writeText) {
      navigator.clipboard.writeText(text).then(function () { said(button, "Copied."); }, fallback);
    } else {
      fallback();
    }
  });
  function extras() { counters(document); copyButtons(document); }
  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", extras); } else { extras(); }
  document.addEventListener("htmx:afterSettle", extras);
  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", enhance); } else { enhance(); }
  document.addEventListener("htmx:afterSettle", enhance);
})();
