// The funnel builder (templates/sessions_app/_funnel_form.html): add, remove and move step
// rows in the page (without JavaScript the same buttons post and the server redraws the
// rows), suggestions of paths, selectors and event names for the row's step kind (GET
// data-suggestions, into the form's <datalist>s), the window's length flagged while it
// is not a whole number of 1 or more; and, on a funnel's results, the numbers refresh
// themselves while days are being computed (polling the results API for its pending days).
(function () {
  "use strict";

  function builder(form) {
    var list = form.querySelector("#step-rows");
    var max = Number(form.getAttribute("data-max-steps")) || 10;

    function rows() {
      return Array.prototype.slice.call(list.querySelectorAll(".step-row"));
    }

    // Rows are numbered 1..n in their order: names, labels and button values follow.
    function renumber() {
      var all = rows();
      all.forEach(function (row, i) {
        var n = i + 1;
        row.querySelector(".step-n").textContent = String(n);
        row.querySelectorAll("[name]").forEach(function (field) {
          field.name = field.name.replace(/^(step|prop)-\d+-/, "$1-" + n + "-");
        });
        row.querySelectorAll("[aria-label]").forEach(function (el) {
          el.setAttribute("aria-label", el.getAttribute("aria-label").replace(/step \d+/i, "step " + n));
        });
        row.querySelectorAll("button[name=builder]").forEach(function (button) {
          button.value = button.value.replace(/-\d+$/, "-" + n);
        });
        row.querySelector(".move-up").disabled = i === 0;
        row.querySelector(".move-down").disabled = i === all.length - 1;
        row.querySelector(".remove").disabled = all.length === 1;
      });
      form.querySelector("#step-count").value = String(all.length);
      form.querySelector("#add-step").disabled = all.length >= max;
    }

    function clear(row) {
      row.classList.remove("has-error");
      var error = row.querySelector(".row-error");
      if (error) error.remove();
      row.querySelectorAll("[aria-invalid]").forEach(function (el) {
        el.removeAttribute("aria-invalid");
        el.removeAttribute("aria-describedby");
      });
    }

    function add() {
      var all = rows();
      if (all.length >= max) return;
      var row = all[all.length - 1].cloneNode(true);
      clear(row);
      row.querySelectorAll("input").forEach(function (input) { input.value = ""; });
      row.querySelectorAll("select").forEach(function (select) { select.selectedIndex = 0; });
      list.appendChild(row);
      renumber();
      kindChanged(row);
      row.querySelector(".step-kind").focus();
    }

    function act(button) {
      var row = button.closest(".step-row");
      if (button.classList.contains("remove")) {
        if (rows().length > 1) row.remove();
      } else if (button.classList.contains("move-up") && row.previousElementSibling) {
        list.insertBefore(row, row.previousElementSibling);
      } else if (button.classList.contains("move-down") && row.nextElementSibling) {
        list.insertBefore(row.nextElementSibling, row);
      }
      renumber();
      if (row.isConnected) button.focus();
    }

    function kindChanged(row) {
      var select = row.querySelector(".step-kind");
      var input = row.querySelector(".step-value");
      var option = select.options[select.selectedIndex];
      if (select.value) input.setAttribute("list", "suggest-" + select.value);
      else input.removeAttribute("list");
      input.placeholder = (option && option.getAttribute("data-placeholder")) || "";
      // Only the kind's own ways of matching (exact, or what kinds.py lists for it).
      var allowed = ((option && option.getAttribute("data-matches")) || "exact").split(" ");
      var match = row.querySelector(".step-match");
      Array.prototype.forEach.call(match.options, function (o) {
        o.disabled = allowed.indexOf(o.value) < 0;
      });
      if (match.selectedOptions[0] && match.selectedOptions[0].disabled) match.value = "exact";
      // A goal step picks one of the site's goals from its own menu instead of the text.
      var goal = row.querySelector(".goal-field");
      if (goal) {
        goal.hidden = select.value !== "goal";
        row.querySelector(".value-field").hidden = select.value === "goal";
        row.querySelector(".match-field").hidden = select.value === "goal";  // a goal has its own
      }
    }

    form.addEventListener("click", function (event) {
      var button = event.target.closest("button[name=builder]");
      if (!button) return;
      event.preventDefault();
      if (button.value === "add") add();
      else act(button);
    });
    form.addEventListener("change", function (event) {
      if (event.target.classList.contains("step-kind")) kindChanged(event.target.closest(".step-row"));
    });
    form.addEventListener("input", function (event) {
      var row = event.target.closest(".step-row");
      if (row) clear(row);
    });
    // Enter in a text field saves (the row buttons come first in the form).
    form.addEventListener("keydown", function (event) {
      if (event.key === "Enter" && event.target.tagName === "INPUT") {
        event.preventDefault();
        form.querySelector("button.primary").click();
      }
    });

    var unit = form.querySelector("#window-unit");
    var length = form.querySelector("#window-value");
    var windowError = form.querySelector("#window-error");
    function checkWindow() {
      var text = length.value.trim();
      var bad = unit.value !== "session" && !(/^\d+$/.test(text) && Number(text) >= 1);
      length.setAttribute("aria-invalid", bad ? "true" : "false");
      windowError.hidden = !bad;
      length.disabled = unit.value === "session";
      return !bad;
    }
    unit.addEventListener("change", checkWindow);
    length.addEventListener("input", checkWindow);
    form.addEventListener("submit", function (event) {
      if (!checkWindow()) {
        event.preventDefault();
        length.focus();
      }
    });

    fetch(form.getAttribute("data-suggestions"), { credentials: "same-origin" })
      .then(function (response) { return response.ok ? response.json() : { suggestions: {} }; })
      .then(function (body) {
        Object.keys(body.suggestions || {}).forEach(function (kind) {
          var datalist = form.querySelector("#suggest-" + kind);
          if (!datalist) return;
          body.suggestions[kind].forEach(function (value) {
            var option = document.createElement("option");
            option.value = value;
            datalist.appendChild(option);
          });
        });
      })
      .catch(function () {});
    rows().forEach(kindChanged);
    renumber();
    checkWindow();
  }

  // A funnel's results while days are computed: poll the results API, show the progress,
  // and when no day is pending load the page's results in place.
  function progress(box) {
    var url = box.getAttribute("data-status") + location.search;
    var total = Number(box.getAttribute("data-total")) || 0;
    var text = box.querySelector(".progress-text");
    var bar = box.querySelector("progress");
    function poll() {
      fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
        .then(function (response) { return response.ok ? response.json() : null; })
        .then(function (body) {
          if (!body) return setTimeout(poll, 4000);
          var pending = (body.days && body.days.pending) || [];
          var done = total - pending.length;
          bar.value = done;
          text.textContent = "Computing: " + done + " of " + total + " days done; the numbers fill in as they finish.";
          if (pending.length) return setTimeout(poll, 1500);
          return fetch(location.href, { credentials: "same-origin" })
            .then(function (response) { return response.text(); })
            .then(function (html) {
              var fresh = new DOMParser().parseFromString(html, "text/html").querySelector("#funnel-results");
              var here = document.querySelector("#funnel-results");
              if (fresh && here) here.replaceWith(fresh);
            });
        })
        .catch(function () { setTimeout(poll, 4000); });
    }
    setTimeout(poll, 1000);
  }

  var form = document.getElementById("funnel-form");
  if (form) builder(form);
  var box = document.getElementById("progress");
  if (box && box.getAttribute("data-status")) progress(box);
})();
