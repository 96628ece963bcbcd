// croft ui: live updates without a reload. The server renders every page; this script only asks for a
// fresh copy when the event stream says something changed, swaps the #live part in, shows every time
// in the reader's own zone with its age (moving as the clock does, without asking the server), and
// turns the buttons into requests (Run now asks first). Without it the page refreshes itself and the
// buttons are plain forms and links.
"use strict";

(function () {
  const csrf = document.querySelector('meta[name="csrf"]').content;
  let busy = false;
  let again = false;

  function ago(ms) {
    const s = Math.round(Math.abs(ms) / 1000);
    if (s < 60) { return ms <= 0 ? "just now" : "in under a minute"; }
    const m = Math.round(s / 60);
    let text;
    if (m < 120) { text = m + " min"; }
    else if (m < 48 * 60) { const h = Math.floor(m / 60); text = h + " h" + (m % 60 ? " " + (m % 60) + " min" : ""); }
    else { const d = Math.floor(m / 1440); text = d + " days" + (Math.floor((m % 1440) / 60) ? " " + Math.floor((m % 1440) / 60) + " h" : ""); }
    return ms > 0 ? "in " + text : text + " ago";
  }

  function clockOf(date, now) {
    const hm = date.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", hour12: false });
    const days = Math.abs(Math.round((new Date(date).setHours(0, 0, 0, 0) - new Date(now).setHours(0, 0, 0, 0)) / 86400000));
    if (days === 0) { return hm; }
    if (days <= 6) { return date.toLocaleDateString([], { weekday: "short" }) + " " + hm; }
    return date.toLocaleDateString([], { month: "short", day: "numeric" }) + " " + hm;
  }

  function localTimes(root) {
    const now = new Date();
    root.querySelectorAll("time[datetime]").forEach(function (el) {
      const at = new Date(el.getAttribute("datetime"));
      if (isNaN(at)) { return; }
      const text = clockOf(at, now) + (el.hasAttribute("data-age") ? " (" + ago(at - now) + ")" : "");
      if (el.textContent !== text) { el.textContent = text; }
      el.title = at.toString();
    });
  }

  function atBottom(el) {
    return el.scrollHeight - el.scrollTop - el.clientHeight < 8;
  }

  async function refresh() {
    if (busy) { again = true; return; }
    busy = true;
    try {
      const answer = await fetch(location.pathname + location.search, { credentials: "same-origin" });
      if (!answer.ok) { return; }
      const doc = new DOMParser().parseFromString(await answer.text(), "text/html");
      const fresh = doc.getElementById("live");
      const live = document.getElementById("live");
      if (!fresh || !live) { return; }
      const open = {};
      live.querySelectorAll("details[data-run]").forEach(function (el) {
        open[el.dataset.run + "/" + el.dataset.status] = el.open;
      });
      const follow = {};
      live.querySelectorAll("pre.log").forEach(function (el, i) { follow[i] = atBottom(el); });
      const notices = live.querySelector("ul.notices");
      localTimes(fresh);
      live.replaceChildren(...fresh.childNodes);
      const kept = live.querySelector("ul.notices");
      if (notices && kept && notices.children.length) { kept.replaceWith(notices); }
      live.querySelectorAll("details[data-run]").forEach(function (el) {
        const key = el.dataset.run + "/" + el.dataset.status;
        if (key in open) { el.open = open[key]; }
      });
      live.querySelectorAll("pre.log").forEach(function (el, i) {
        if (follow[i] !== false) { el.scrollTop = el.scrollHeight; }
      });
      document.body.dataset.refreshed = String(Date.now());
    } catch (e) {
      // the server is gone or restarting: the event stream reconnects and asks again
    } finally {
      busy = false;
      if (again) { again = false; refresh(); }
    }
  }

  function tell(kind, text) {
    const list = document.querySelector("ul.notices");
    if (!list) { return; }
    const item = document.createElement("li");
    item.className = "notice " + kind;
    item.textContent = text;
    list.replaceChildren(item);
  }

  function said(path, fields, envelope) {
    if (!envelope) { return ["bad", "the page could not reach croft ui"]; }
    const bad = (envelope.problems || []).filter(function (p) { return p.severity === "error"; });
    if (!envelope.ok || bad.length) {
      const first = bad[0] || (envelope.problems || [])[0] || { message: "it did not work" };
      return ["bad", first.message];
    }
    if (path === "/api/run") {
      const d = envelope.data || {};
      return ["good", "croft run " + fields.asset + ": run " + d.runId + " " + (d.status || "started")];
    }
    return ["good", path === "/api/pause" ? "scheduling paused for 2 h" : "scheduling resumed"];
  }

  async function post(path, fields) {
    let envelope = null;
    try {
      const answer = await fetch(path, {
        method: "POST",
        credentials: "same-origin",
        headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf },
        body: JSON.stringify(fields),
      });
      envelope = await answer.json();
    } catch (e) {
      envelope = null;
    }
    tell.apply(null, said(path, fields, envelope));
    await refresh();
    return envelope;
  }

  document.addEventListener("click", function (event) {
    const run = event.target.closest("a.button.run");
    if (!run) { return; }
    event.preventDefault();
    if (!window.confirm(run.dataset.confirm)) { return; }
    post("/api/run", { project: run.dataset.project, asset: run.dataset.asset });
  });

  document.addEventListener("submit", function (event) {
    const form = event.target.closest("form.action");
    if (!form) { return; }
    event.preventDefault();
    const fields = {};
    new FormData(form).forEach(function (value, name) {
      if (name !== "csrf") { fields[name] = String(value); }
    });
    form.querySelectorAll("button").forEach(function (b) { b.disabled = true; });
    post(form.getAttribute("action"), fields);
  });

  const events = new EventSource("/events");
  events.addEventListener("change", refresh);
  events.addEventListener("error", function () {
    // refused (too many pages follow the events): this one refreshes itself, as without JavaScript
    if (events.readyState === EventSource.CLOSED && !document.body.dataset.polling) {
      document.body.dataset.polling = "1";
      setInterval(refresh, 10000);
    }
  });
  localTimes(document);
  setInterval(function () { localTimes(document); }, 30000);
  document.querySelectorAll("pre.log").forEach(function (el) { el.scrollTop = el.scrollHeight; });
  document.body.dataset.live = "1";
})();
