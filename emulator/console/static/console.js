// The local console's pages: state machines, executions, one execution, alarms, on-call schedules (Slack in slack.js,
// Phone and E-mail in phone.js); and the clock in the header.
// Plain JavaScript over the JSON API in emulator/console/__init__.py; every page polls once a second.
"use strict";

const view = document.getElementById("view");
let pageTimer = null;

async function api(path, body) {
  const options = body === undefined ? { cache: "no-store" }
    : { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) };
  const response = await fetch(path, options);
  const answer = await response.json().catch(() => ({ error: response.statusText }));
  if (!response.ok) throw new Error(answer.error || response.statusText);
  return answer;
}

function el(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) {
    if (key === "class") element.className = value;
    else if (key.startsWith("on")) element.addEventListener(key.slice(2), value);
    else element.setAttribute(key, value);
  }
  element.append(...children.filter((child) => child !== null && child !== undefined));
  return element;
}

// Simulated instants and durations, as `follow` prints them.
function when(epoch) {
  if (epoch === null || epoch === undefined) return "–";
  return new Date(epoch * 1000).toISOString().replace("T", " ").replace("Z", " UTC");
}

function duration(seconds) {
  if (seconds < 120) return `${seconds.toFixed(1)} s`;
  let rest = Math.round(seconds);
  const secs = rest % 60; rest = (rest - secs) / 60;
  const minutes = rest % 60; const hours = (rest - minutes) / 60;
  const two = (n) => String(n).padStart(2, "0");
  return hours ? `${hours} h ${two(minutes)} min ${two(secs)} s` : `${minutes} min ${two(secs)} s`;
}

function pretty(text) {
  if (text === null || text === undefined || text === "") return "";
  try { return JSON.stringify(JSON.parse(text), null, 2); } catch { return String(text); }
}

function statusBadge(status) {
  return el("span", { class: `badge status-${status.toLowerCase()}` }, status);
}

// ---- the clock ---------------------------------------------------------------------------------

async function refreshClock(change) {
  const error = document.getElementById("clock-error");
  try {
    const clock = change ? await api(`/api/clock/${change.action}`, change.body || {}) : await api("/api/clock");
    error.textContent = "";
    document.getElementById("clock-time").textContent = when(clock.now);
    const mode = document.getElementById("clock-mode");
    mode.textContent = clock.paused ? "paused" : clock.speed === "instant" ? "instant" : `${clock.speed}×`;
    mode.dataset.paused = clock.paused;
    const speed = document.getElementById("clock-speed");
    if (document.activeElement !== speed) speed.value = String(clock.speed);
    const next = [];
    if (clock.next_wakeup !== null) next.push(`next wake-up in ${duration(clock.next_wakeup - clock.now)} (${clock.waiting} waiting)`);
    for (const schedule of clock.schedules) {
      next.push(`next firing of ${schedule.rule} in ${duration(schedule.at - clock.now)} (${when(schedule.at)})`);
    }
    for (const schedule of clock.scheduler) {
      next.push(`next firing of ${schedule.group}/${schedule.name} in ${duration(schedule.next - clock.now)} (${when(schedule.next)})`);
    }
    document.getElementById("clock-next").textContent = next.join(" · ") || "nothing waits on the clock";
  } catch (failure) {
    error.textContent = failure.message;
  }
}

document.getElementById("clock-pause").addEventListener("click", () => refreshClock({ action: "pause" }));
document.getElementById("clock-resume").addEventListener("click", () => refreshClock({ action: "resume" }));
document.getElementById("clock-advance").addEventListener("click", () =>
  refreshClock({ action: "advance", body: { seconds: Number(document.getElementById("clock-seconds").value) } }));
document.getElementById("clock-speed").addEventListener("change", (event) =>
  refreshClock({ action: "speed", body: { speed: event.target.value } }));

// ---- state machines ----------------------------------------------------------------------------

async function machinesPage() {
  view.replaceChildren(el("h1", {}, "State machines"));
  const machines = await api("/api/machines");
  for (const machine of machines) {
    const editor = el("textarea", { class: "input", rows: 6, spellcheck: "false" });
    const note = el("p", { class: "muted seeds" });
    const message = el("p", { class: "error" });
    const choose = (sample) => {
      editor.value = sample ? pretty(sample.input) : "{}";
      note.textContent = sample && sample.seeds ? `Start also puts the alert item ${sample.seeds} into the alert table.` : "";
    };
    const picker = el("select", { class: "sample", onchange: () => choose(machine.samples[picker.selectedIndex]) },
      ...machine.samples.map((sample) => el("option", { value: sample.name }, `${sample.name}  (${sample.file})`)));
    const start = el("button", { class: "start primary", type: "button" }, "Start execution");
    start.addEventListener("click", async () => {
      message.textContent = "";
      try {
        const started = await api("/api/executions", { machine: machine.arn, input: editor.value });
        location.hash = `#/execution/${encodeURIComponent(started.executionArn)}`;
      } catch (failure) {
        message.textContent = failure.message;
      }
    });
    const graph = el("div", { class: "graph-box wide" });
    view.append(el("section", { class: "machine card", "data-machine": machine.name },
      el("h2", {}, machine.name), el("p", { class: "muted arn" }, machine.arn),
      el("div", { class: "columns" }, graph,
        el("div", { class: "start-form" },
          machine.samples.length ? el("label", {}, "Sample input ", picker) : el("p", { class: "muted" }, "No sample inputs"),
          editor, note, start, message))));
    choose(machine.samples[0]);
    drawGraph(graph, machine.definition, () => {});
  }
}

// ---- executions --------------------------------------------------------------------------------

async function executionsPage() {
  const body = el("tbody");
  view.replaceChildren(el("h1", {}, "Executions"),
    el("table", { class: "executions" },
      el("thead", {}, el("tr", {}, ...["Name", "State machine", "Status", "Started", "Ended", "Duration"].map((h) => el("th", {}, h)))),
      body));
  const refresh = async () => {
    const executions = await api("/api/executions");
    const clock = await api("/api/clock");
    body.replaceChildren(...executions.map((e) => el("tr", { "data-arn": e.arn },
      el("td", {}, el("a", { href: `#/execution/${encodeURIComponent(e.arn)}` }, e.name)),
      el("td", {}, e.machine), el("td", {}, statusBadge(e.status)), el("td", {}, when(e.start)), el("td", {}, when(e.stop)),
      el("td", {}, duration((e.stop || clock.now) - e.start)))));
  };
  await refresh();
  pageTimer = setInterval(refresh, 1000);
}

// ---- one execution -----------------------------------------------------------------------------

async function executionPage(arn) {
  let graph = null;
  let selected = null;
  let chosen = false; // once a person clicks a state, keep showing it
  let shownEvents = 0;
  const title = el("h1", {}, "Execution");
  const status = el("span", { id: "execution-status" });
  const summary = el("dl", { class: "summary" });
  const trigger = el("div", { id: "started-by" });
  const graphBox = el("div", { class: "graph-box" });
  const step = el("div", { class: "step card", id: "step" });
  const history = el("tbody");
  const logs = el("div", { id: "function-logs" });
  let shownLogs = "";
  const slack = el("ol", { id: "slack", reversed: "" });
  const problem = el("p", { class: "error" });
  const legend = el("p", { class: "legend" }, ...[["succeeded", "Succeeded"], ["failed", "Failed"], ["caught", "Caught error"],
    ["cancelled", "Cancelled"], ["in_progress", "In progress"]].map(([key, label]) => el("span", { class: `key ${key}` }, label)));
  view.replaceChildren(title, el("p", {}, "Status ", status), problem, summary, trigger,
    el("div", { class: "columns" }, el("div", { class: "card wide" }, el("h2", {}, "Graph view"), legend, graphBox), step),
    el("div", { class: "card" }, el("h2", {}, "Event history"),
      el("table", { class: "history", id: "history" },
        el("thead", {}, el("tr", {}, ...["ID", "Type", "Step", "Resource", "Elapsed time (ms)", "Timestamp"].map((h) => el("th", {}, h)))),
        history)),
    el("div", { class: "card" }, el("h2", {}, "Function logs"), logs),
    el("div", { class: "card" }, el("h2", {}, "Slack posts received by the stand-in (all executions, newest first)"), slack));
  const refreshSlack = slackPanel(slack);

  const showStep = (execution) => {
    const state = execution.states[selected];
    if (!state) {
      step.replaceChildren(el("h2", {}, "Step details"), el("p", { class: "muted" }, "Select a state in the graph."));
      return;
    }
    const block = (label, text) => el("div", {}, el("h3", {}, label), el("pre", { class: label.toLowerCase() }, pretty(text) || "–"));
    step.replaceChildren(el("h2", {}, `Step details: ${selected}`),
      el("p", {}, "Status ", statusBadge(state.status || "not run"), state.entered > 1 ? ` (entered ${state.entered} times; the last shown)` : ""),
      el("p", {}, "Resource ", el("code", {}, state.resource || "–")),
      block("Input", state.input), block("Output", state.output),
      block("Exception", state.error ? `${state.error}\n${pretty(state.cause)}` : ""));
  };

  const refresh = async () => {
    const execution = await api(`/api/execution?arn=${encodeURIComponent(arn)}`);
    title.textContent = `Execution ${execution.name}`;
    status.replaceChildren(statusBadge(execution.status));
    status.dataset.status = execution.status;
    problem.textContent = execution.error ? `${execution.error}: ${execution.cause || ""}` : "";
    const s = execution.summary;
    summary.replaceChildren(...[
      ["State machine", execution.machine.name], ["Started", when(execution.start)], ["Ended", when(execution.stop)],
      ["State transitions", `${s.transitions} (${s.states_entered} states entered, ${s.retries} retries)`],
      ["Lambda invocations", String(s.lambda_invocations)], ["Simulated time", s.simulated],
      ["Cost", `$${s.cost_usd.toFixed(6)} per execution ($${(s.cost_usd * 1e6).toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 })} per million)`],
    ].flatMap(([term, value]) => [el("dt", {}, term), el("dd", {}, value)]));
    if (execution.started_by && !trigger.childElementCount) trigger.append(startedBy(execution.started_by));
    if (!graph) {
      graph = drawGraph(graphBox, execution.definition, (name) => { selected = name; chosen = true; graph.update(execution.states, selected); showStep(execution); });
    }
    if (!chosen) {
      const last = [...execution.events].reverse().find((e) => e.type.endsWith("StateEntered"));
      selected = last ? last.step : null;
    }
    graph.update(execution.states, selected);
    showStep(execution);
    for (const event of execution.events.slice(shownEvents)) {
      history.append(el("tr", { "data-type": event.type },
        el("td", {}, String(event.id)),
        el("td", {}, el("details", {}, el("summary", {}, event.type), el("pre", {}, JSON.stringify(event.details, null, 2)))),
        el("td", {}, event.step || ""), el("td", {}, event.resource || "–"),
        el("td", { class: "number" }, String(event.elapsed_ms)), el("td", {}, when(event.timestamp))));
    }
    shownEvents = execution.events.length;
    if (JSON.stringify(execution.logs) !== shownLogs) {  // redrawn only when a line came: an open block stays open
      shownLogs = JSON.stringify(execution.logs);
      logs.replaceChildren(...(execution.logs.length ? execution.logs.map(invocationLog)
        : [el("p", { class: "muted" }, "No function called yet.")]));
    }
    await refreshSlack();
    return execution.status;
  };
  const loop = async () => {
    try {
      const now = await refresh();
      pageTimer = setTimeout(loop, now === "RUNNING" ? 500 : 3000);
    } catch (failure) {
      problem.textContent = failure.message;
      pageTimer = setTimeout(loop, 2000);
    }
  };
  await loop();
}

// One invocation's lines as CloudWatch Logs holds them: its group and stream, each line with its simulated time.
function invocationLog(call) {
  return el("details", { class: "invocation-log", open: "" },
    el("summary", {}, `${call.function} · ${call.request_id} · ${when(call.start)}`),
    el("p", { class: "muted" }, `${call.group} › ${call.stream}`),
    el("pre", {}, call.lines.map((line) => `${new Date(line.timestamp * 1000).toISOString()}  ${line.message}`).join("\n")));
}

// The EventBridge event whose rule started an execution: what it says at a glance, and the whole event.
function startedBy({ rule, target, event }) {
  const detail = event.detail || {};
  const through = target && target.split(":")[2] === "lambda" ? ` → Lambda function ${target.split(":").pop()}` : "";
  const facts = [["Event", `${event.source} · ${event["detail-type"]}`], ["Rule", rule + through], ["Event time", event.time]];
  if (detail.alarmName) {
    facts.splice(1, 0, ["Alarm", detail.alarmName],
      ["State", `${(detail.previousState || {}).value || "?"} → ${(detail.state || {}).value || "?"}`]);
    if (detail.state && detail.state.reason) facts.push(["Reason", detail.state.reason]);
  }
  return el("div", { class: "card" }, el("h2", {}, "Started by"),
    el("dl", { class: "summary" }, ...facts.flatMap(([term, value]) => [el("dt", {}, term), el("dd", {}, String(value))])),
    el("details", {}, el("summary", {}, "The event"), el("pre", {}, JSON.stringify(event, null, 2))));
}

// ---- Slack -------------------------------------------------------------------------------------

async function slackPage() {
  const slack = el("ol", { id: "slack", class: "tall", reversed: "" });
  view.replaceChildren(el("h1", {}, "Slack"),
    await slashCommandBox(),
    el("p", { class: "muted" }, "The messages the app posted to the Slack stand-in, newest first, as a person sees them. " +
      "A button opens its link; where the app's interactivity is set up, a click also sends the app what Slack sends."),
    el("div", { class: "card" }, slack));
  const refresh = slackPanel(slack);
  await refresh();
  pageTimer = setInterval(refresh, 1000);
}

// ---- alarms and what the app's topics received ------------------------------------------------

async function alarmsPage() {
  const alarms = el("tbody");
  const changes = el("ol", { id: "alarm-changes", class: "plain" });
  const topics = el("div", { id: "topics" });
  // What changed comes first: a person advancing the clock watches these two, then reads the table.
  view.replaceChildren(el("h1", {}, "Alarms"),
    el("p", { class: "muted" }, "CloudWatch evaluates each alarm at the end of every period of simulated time: advance the clock to see them change."),
    el("div", { class: "columns" },
      el("div", { class: "card" }, el("h2", {}, "State changes (newest first)"), changes),
      el("div", { class: "card wide" }, el("h2", {}, "Messages the app's topics received (newest first)"), topics)),
    el("table", { class: "alarms", id: "alarms" },
      el("thead", {}, el("tr", {}, ...["Alarm", "State", "Since", "Metric", "Condition", "Reason"].map((h) => el("th", {}, h)))),
      alarms));
  const refresh = async () => {
    const [answer, received] = [await api("/api/alarms"), await api("/api/topics")];
    alarms.replaceChildren(...answer.alarms.map((a) => el("tr", { "data-alarm": a.name, "data-state": a.state, "data-updated": String(a.updated) },
      el("td", {}, a.name), el("td", {}, el("span", { class: `badge state-${a.state.toLowerCase()}` }, a.state)),
      el("td", {}, when(a.updated)),
      el("td", {}, a.metric, ...Object.entries(a.dimensions).map(([k, v]) => el("div", { class: "muted arn" }, `${k}: ${v}`))),
      el("td", {}, a.condition), el("td", { class: "reason" }, a.reason))));
    changes.replaceChildren(...answer.changes.map((c) => el("li", {},
      el("span", { class: `badge state-${c.from.toLowerCase()}` }, c.from), " → ",
      el("span", { class: `badge state-${c.to.toLowerCase()}` }, c.to), ` ${c.alarm} at ${when(c.time)}`,
      ...c.actions.map((a) => el("div", { class: a.error ? "error" : "muted" }, a.error ? `${a.target}: ${a.error}` : `notified ${a.target}`)))));
    topics.replaceChildren(...received.map((topic) => el("section", { class: "topic", "data-topic": topic.arn },
      el("h3", {}, `${topic.stack} · ${topic.output}`), el("p", { class: "muted arn" }, topic.arn),
      topic.messages.length ? el("ol", { class: "messages plain" }, ...topic.messages.map((m) => el("li", { "data-seq": String(m.seq) },
        el("details", {}, el("summary", {}, m.subject || firstLine(m.message)), el("pre", {}, pretty(m.message))))))
        : el("p", { class: "muted" }, "No message yet."))));
  };
  await refresh();
  pageTimer = setInterval(() => refresh().catch(() => {}), 1000);
}

function firstLine(text) {
  try {
    const message = JSON.parse(text);
    return message.summary || message.AlarmName || text.slice(0, 120);
  } catch {
    return text.slice(0, 120);
  }
}

// ---- on-call schedules --------------------------------------------------------------------------

async function oncallPage() {
  const list = el("div", { id: "oncall" });
  view.replaceChildren(el("h1", {}, "On call"),
    el("p", { class: "muted" }, "Each schedule of the on-call table from the start of its day to two weeks from now (simulated " +
      "time), in its time zone: a row per layer, the overrides, and who is on call once all of them apply. " +
      "Schedules that cannot be read come first. Hover a shift for its times."),
    el("p", { class: "legend oncall-legend" }, el("span", { class: "key cover" }, "an override: who covers"),
      el("span", { class: "key gap" }, "a gap: nobody on call (the level's next target is paged)"),
      el("span", { class: "key now" }, "now (simulated)")),
    list);
  const refresh = async () => {
    const { now, schedules } = await api("/api/oncall");
    list.replaceChildren(...(schedules.length ? schedules.map((s) => (s.error ? brokenSchedule(s) : scheduleTimeline(s, now)))
      : [el("p", { class: "muted" }, "No schedules yet: put one into the table of OnCallTableName (docs/on-call-schedules.md).")]));
  };
  await refresh();
  pageTimer = setInterval(refresh, 5000);
}

function brokenSchedule(s) {
  return el("section", { class: "card schedule broken", "data-schedule": s.schedule_id },
    el("h2", {}, s.schedule_id, " ", el("span", { class: "badge status-failed" }, "InvalidSchedule")),
    el("p", { class: "error" }, s.error),
    el("p", { class: "muted" }, "Nobody is on call from it: a level naming it pages its other targets, and the alert fails " +
      "with ScheduleUnreadable when the round pages nobody."));
}

// A member's colour, the same in every row and schedule, so the final row shows whose layer it took.
function memberColour(member) {
  let hash = 0;
  for (const c of member) hash = (hash * 31 + c.charCodeAt(0)) % 360;
  return `hsl(${hash}, 65%, 84%)`;
}

function scheduleTimeline(s, nowEpoch) {
  const span = s.end - s.start;
  const at = (epoch) => `${(100 * (Math.min(Math.max(epoch, s.start), s.end) - s.start) / span).toFixed(3)}%`;
  const width = (a, b) => `${(100 * (Math.min(b, s.end) - Math.max(a, s.start)) / span).toFixed(3)}%`;
  const segment = (shift, kind, text) => el("div", {
    class: `segment ${kind}`, "data-member": shift.member || "", "data-start": shift.start_text, "data-end": shift.end_text,
    style: `left: ${at(shift.start)}; width: ${width(shift.start, shift.end)};` + (shift.member && kind !== "gap" ? ` background: ${memberColour(shift.member)};` : ""),
    title: `${text}: ${shift.start_text} – ${shift.end_text}`,
  }, el("span", {}, text));
  const row = (name, label, segments, extra = "") => el("div", { class: `row ${extra}`, "data-row": name },
    el("div", { class: "row-label" }, ...label), el("div", { class: "track" }, ...segments));
  const days = s.days.map((day) => el("div", { class: "day", style: `left: ${at(day.start)}` }, day.label));
  const rows = [
    row("days", [""], days, "days"),
    ...s.layers.map((layer, index) => row(`layer ${index + 1}`, [`Layer ${index + 1}`, el("small", {}, layer.members.join(", "))],
      layer.shifts.filter((shift) => shift.member).map((shift) => segment(shift, "shift", shift.member)))),
    ...(s.overrides.length ? [row("overrides", ["Overrides"],
      s.overrides.map((o) => segment(o, "override", `${o.member} covers`)))] : []),
    row("final", ["On call", el("small", {}, "final schedule")], s.shifts.map((shift) => (shift.member === null
      ? segment(shift, "gap", "gap: nobody")
      : segment(shift, shift.override ? "shift override" : "shift", shift.override ? `${shift.member} (covers)` : shift.member))), "final"),
  ];
  const now = el("div", { class: "now", style: `--at-fraction: ${((nowEpoch - s.start) / span).toFixed(5)}`, title: "now (simulated)" },
    el("span", {}, "now"));
  return el("section", { class: "card schedule", "data-schedule": s.schedule_id },
    el("h2", {}, `${s.schedule_id} `, el("span", { class: "muted" }, `(${s.time_zone})`)),
    el("div", { class: "timeline" }, ...rows, now),
    el("details", {}, el("summary", {}, "Shifts as a list"),
      el("table", {}, el("thead", {}, el("tr", {}, el("th", {}, "On call"), el("th", {}, "From"), el("th", {}, "Until"))),
        el("tbody", {}, ...s.shifts.map((shift) => el("tr", { "data-member": shift.member || "" },
          el("td", {}, shift.member === null ? "nobody (a gap: the level's next target is paged)"
            : shift.override ? `${shift.member} (override)` : shift.member),
          el("td", {}, shift.start_text), el("td", {}, shift.end_text)))))));
}

// ---- routing -----------------------------------------------------------------------------------

async function route() {
  clearInterval(pageTimer);
  clearTimeout(pageTimer);
  const hash = location.hash || "#/machines";
  try {
    if (hash.startsWith("#/execution/")) await executionPage(decodeURIComponent(hash.slice("#/execution/".length)));
    else if (hash === "#/executions") await executionsPage();
    else if (hash === "#/slack") await slackPage();
    else if (hash === "#/alarms") await alarmsPage();
    else if (hash === "#/oncall") await oncallPage();
    else if (hash === "#/phone") await phonePage();
    else if (hash === "#/email") await emailPage();
    else await machinesPage();
  } catch (failure) {
    view.replaceChildren(el("p", { class: "error" }, failure.message));
  }
}

window.addEventListener("hashchange", route);
route();
refreshClock();
setInterval(refreshClock, 1000);
