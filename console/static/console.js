// holdfast console: keeps a shop page's tables and the charts current by
// polling the console's own endpoints. No dependencies, no inline script.
"use strict";
(function () {
  var LIVE_EVERY = 1000, CHARTS_EVERY = 5000;

  function cell(tr, text, cls) {
    var td = document.createElement("td");
    td.textContent = text;
    if (cls) td.className = cls;
    tr.appendChild(td);
    return td;
  }
  function linkCell(tr, href, text) {
    var td = document.createElement("td"), a = document.createElement("a");
    a.href = href;
    a.textContent = text;
    td.appendChild(a);
    tr.appendChild(td);
  }
  function empty(tbody, cols, text) {
    var tr = document.createElement("tr"), td = document.createElement("td");
    tr.className = "empty";
    td.colSpan = cols;
    td.textContent = text;
    tr.appendChild(td);
    tbody.appendChild(tr);
  }

  function renderLive(root, v) {
    var prefix = root.dataset.prefix, shop = root.dataset.shop;
    var keys = document.querySelector("#keys tbody"), holds = document.querySelector("#holds tbody");
    var kb = document.createDocumentFragment(), hb = document.createDocumentFragment();
    v.keys.forEach(function (k) {
      var tr = document.createElement("tr");
      tr.dataset.key = k.item_id + "/" + k.location_id;
      linkCell(tr, prefix + "/shops/" + shop + "/keys/" + k.item_id + "/" + k.location_id, String(k.item_id));
      cell(tr, String(k.location_id));
      cell(tr, String(k.available));
      cell(tr, String(k.held));
      cell(tr, String(k.pooled));
      cell(tr, String(k.sellable) + (k.over_committed ? " (over-committed)" : ""));
      cell(tr, k.strategy);
      kb.appendChild(tr);
    });
    v.holds.forEach(function (h) {
      var tr = document.createElement("tr");
      tr.dataset.checkout = h.checkout_id;
      linkCell(tr, prefix + "/shops/" + shop + "/holds/" + h.checkout_id, h.checkout_id);
      cell(tr, h.status + (h.claimable && h.status === "expired" ? " (claimable)" : ""), "status-" + h.status);
      cell(tr, h.lines);
      cell(tr, h.created_at);
      cell(tr, h.expires_at);
      hb.appendChild(tr);
    });
    keys.replaceChildren(kb);
    holds.replaceChildren(hb);
    if (!v.keys.length) empty(keys, 7, "No stock yet.");
    if (!v.holds.length) empty(holds, 5, "No holds.");
    var events = document.querySelector("#events tbody");
    if (events && v.events) {
      var eb = document.createDocumentFragment();
      v.events.forEach(function (e) {
        var tr = document.createElement("tr");
        tr.dataset.cursor = String(e.cursor);
        tr.dataset.type = e.type;
        cell(tr, String(e.cursor));
        cell(tr, e.type);
        cell(tr, e.subject);
        cell(tr, e.detail);
        cell(tr, e.at);
        eb.appendChild(tr);
      });
      events.replaceChildren(eb);
      if (!v.events.length) empty(events, 5, "No events.");
    }
    var hooks = document.querySelector("#webhooks tbody");
    if (hooks && v.webhooks) {
      var wb = document.createDocumentFragment();
      v.webhooks.forEach(function (w) {
        var tr = document.createElement("tr");
        tr.dataset.endpoint = String(w.id);
        cell(tr, String(w.id));
        cell(tr, w.url);
        cell(tr, String(w.cursor));
        cell(tr, w.lag, "lag");
        cell(tr, w.state);
        cell(tr, w.next_attempt_at || "");
        cell(tr, w.last_error || "");
        cell(tr, String(w.dead_letters));
        wb.appendChild(tr);
      });
      hooks.replaceChildren(wb);
      if (!v.webhooks.length) empty(hooks, 8, "No webhook endpoints (holdfast webhooks add).");
    }
  }

  // stamp is a time in the console's one format (the server's TimeLayout):
  // UTC, to the millisecond, with its zone.
  function stamp(d) {
    return d.toISOString().replace("T", " ").replace("Z", " UTC");
  }

  function pollLive(root) {
    var status = document.getElementById("live-status");
    function tick() {
      fetch(root.dataset.live, { credentials: "same-origin", headers: { Accept: "application/json" } })
        .then(function (r) {
          if (r.status === 401) { window.location = root.dataset.prefix + "/login"; throw new Error("logged out"); }
          if (!r.ok) throw new Error("HTTP " + r.status);
          return r.json();
        })
        .then(function (v) {
          renderLive(root, v);
          status.textContent = "live · updated " + stamp(new Date());
          status.className = "note";
          root.dataset.updates = String(Number(root.dataset.updates || "0") + 1);
        })
        .catch(function (e) {
          status.textContent = "not updating: " + e.message;
          status.className = "error";
        })
        .finally(function () { setTimeout(tick, LIVE_EVERY); });
    }
    tick();
  }

  function pollCharts() {
    function tick() {
      var el = document.getElementById("charts");
      if (!el || !el.dataset.refresh || !el.dataset.src) return;
      fetch(el.dataset.src, { credentials: "same-origin" })
        .then(function (r) { if (!r.ok) throw new Error("HTTP " + r.status); return r.text(); })
        .then(function (html) {
          var t = document.createElement("template");
          t.innerHTML = html.trim();
          var fresh = t.content.firstElementChild;
          if (fresh) el.replaceWith(fresh);
        })
        .catch(function () {})
        .finally(function () { setTimeout(tick, CHARTS_EVERY); });
    }
    setTimeout(tick, CHARTS_EVERY);
  }

  document.addEventListener("DOMContentLoaded", function () {
    var root = document.getElementById("live");
    if (root) pollLive(root);
    if (document.getElementById("charts")) pollCharts();
  });
})();
