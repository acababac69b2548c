// avo ui: follow a run live (server-sent events), raw events on demand, compare picks.
(function () {
  "use strict";

  function follow(head) {
    var runId = head.dataset.run;
    var last = head.dataset.last || "0";
    var timeline = document.getElementById("timeline");
    var note = document.getElementById("live-note");
    var source = new EventSource("/runs/" + encodeURIComponent(runId) + "/stream?after=" + last);
    source.addEventListener("item", function (msg) {
      var holder = document.createElement("div");
      holder.innerHTML = msg.data;
      var node = holder.firstElementChild;
      if (!node || document.getElementById(node.id)) return;
      node.classList.add("fresh");
      timeline.appendChild(node);
      closeAnswered(timeline, node);
      if (note) note.hidden = false;
      if (window.innerHeight + window.scrollY >= document.body.offsetHeight - 300) {
        node.scrollIntoView({ block: "end" });
      }
    });
    source.addEventListener("state", function (msg) {
      var s = JSON.parse(msg.data);
      var badge = document.getElementById("run-state");
      badge.textContent = s.activity;
      badge.className = "badge " + s.state;
      document.getElementById("run-steps").textContent = s.steps;
      document.getElementById("run-tokens").textContent = Number(s.tokens).toLocaleString("en");
      document.getElementById("run-cost").textContent = s.cost;
      document.getElementById("run-events").textContent = s.last;
      head.dataset.last = s.last;
    });
    source.addEventListener("end", function () {
      source.close();
      if (note) note.hidden = true;
      // the actions offered depend on the state the run stopped in
      window.setTimeout(function () { window.location.reload(); }, 150);
    });
  }

  // An answer recorded elsewhere (another shell, another tab) closes the question's form.
  function closeAnswered(timeline, node) {
    var call = node.dataset.call;
    if (!call || !/\bk-(approved|denied|answer)\b/.test(node.className)) return;
    var title = node.querySelector(".title");
    timeline.querySelectorAll(".item.k-ask").forEach(function (asked) {
      if (asked.dataset.call !== call) return;
      var form = asked.querySelector("form.decide");
      if (!form) return;
      var said = document.createElement("p");
      said.className = "answered-note";
      said.textContent = "already " + (title ? title.textContent : "answered") + " (see below)";
      form.replaceWith(said);
    });
  }

  function rawToggles() {
    document.addEventListener("click", function (ev) {
      var button = ev.target.closest(".raw-toggle");
      if (!button) return;
      var pre = button.closest(".card").querySelector("pre.raw");
      if (!pre.hidden) { pre.hidden = true; return; }
      fetch(button.dataset.raw, { credentials: "same-origin" })
        .then(function (r) { return r.json(); })
        .then(function (data) { pre.textContent = JSON.stringify(data, null, 2); pre.hidden = false; });
    });
  }

  function comparePicks() {
    var form = document.getElementById("compare-form");
    if (!form) return;
    var button = document.getElementById("compare-button");
    form.addEventListener("change", function () {
      var picked = Array.prototype.slice.call(form.querySelectorAll(".pick:checked"));
      button.disabled = picked.length !== 2;
      button.textContent = picked.length === 2 ? "Compare these two" : "Compare selected (" + picked.length + "/2)";
      if (picked.length === 2) {
        document.getElementById("cmp-a").value = picked[0].value;
        document.getElementById("cmp-b").value = picked[1].value;
      }
    });
  }

  // the runs list: rows of runs not finished follow their state every 2 s
  function followRows() {
    var rows = document.querySelectorAll("tr[data-follow=yes]");
    if (!rows.length) return;
    var timer = window.setInterval(function () {
      var open = document.querySelectorAll("tr[data-follow=yes]");
      if (!open.length) { window.clearInterval(timer); return; }
      var query = Array.prototype.map.call(open, function (row) {
        return "id=" + encodeURIComponent(row.dataset.run);
      }).join("&");
      fetch("/runs.json?" + query, { credentials: "same-origin" })
        .then(function (r) { return r.json(); })
        .then(function (runs) {
          Array.prototype.forEach.call(open, function (row) {
            var s = runs[row.dataset.run];
            if (!s) return;
            var badge = row.querySelector("[data-field=label]");
            badge.textContent = s.label;
            badge.className = "badge " + s.state;
            row.querySelector("[data-field=steps]").textContent = s.steps;
            row.querySelector("[data-field=tokens]").textContent = Number(s.tokens).toLocaleString("en");
            if (s.terminal) row.dataset.follow = "no";
          });
        });
    }, 2000);
  }

  function confirms() {
    document.addEventListener("submit", function (ev) {
      var text = ev.target.dataset && ev.target.dataset.confirm;
      if (text && !window.confirm(text)) ev.preventDefault();
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    var head = document.querySelector(".runhead");
    if (head && head.dataset.live === "yes") follow(head);
    rawToggles();
    comparePicks();
    followRows();
    confirms();
  });
})();
