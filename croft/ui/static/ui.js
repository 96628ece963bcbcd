// croft ui: live updates without a reload. The server renders every page; this script only asks for a
// fresh copy when the event stream says something changed, swaps the #live part in, and turns the
// buttons into requests (Run now asks first). Without it the page refreshes itself and the buttons are
// plain forms and links.
"use strict";

(function () {
  const csrf = document.querySelector('meta[name="csrf"]').content;
  let busy = false;
  let again = false;

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
      const follow = {};
      live.querySelectorAll("pre.log").forEach(function (el) {
        follow[el.dataset.asset] = atBottom(el);
      });
      live.replaceChildren(...fresh.childNodes);
      live.querySelectorAll("pre.log").forEach(function (el) {
        if (follow[el.dataset.asset] !== false) { el.scrollTop = el.scrollHeight; }
      });
      document.body.dataset.refreshed = String(Date.now());
    } catch (e) {
      // the server is gone or restarting: the event stream reconnects and asks again
    } finally {
      busy = false;
      if (again) { again = false; refresh(); }
    }
  }

  async function post(path, fields) {
    const answer = await fetch(path, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf },
      body: JSON.stringify(fields),
    });
    await refresh();
    return answer.ok ? answer.json() : null;
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
  document.querySelectorAll("pre.log").forEach(function (el) { el.scrollTop = el.scrollHeight; });
  document.body.dataset.live = "1";
})();
