// Draws any state machine definition (JSONPath or JSONata) as the Step Functions console's graph:
// states from the definition itself, Map and Parallel states as boxes around what they run.
"use strict";

const SVG_NS = "http://www.w3.org/2000/svg";
const measure = document.createElement("canvas").getContext("2d");
measure.font = "13px system-ui, sans-serif";

// An edge label as at most three short lines (the full text is the label's tooltip), so a Choice
// with many branches does not spread its labels across the page. Lines break between words only: a
// word longer than a line (an error name such as AlertAlreadyRunning) is a line of its own, whole, and
// a label cut short ends with "…" after a whole word.
const LABEL_CHARS = 18;
const LABEL_LINES = 3;
const LABEL_OFFSET = 6;  // px between an edge and its label
function labelLines(text) {
  const lines = [];
  for (const word of text.split(/\s+/).filter(Boolean)) {
    const last = lines.length ? lines[lines.length - 1] : null;
    if (last !== null && last.length + 1 + word.length <= LABEL_CHARS) lines[lines.length - 1] = `${last} ${word}`;
    else lines.push(word);
  }
  return lines.length <= LABEL_LINES ? lines : [...lines.slice(0, LABEL_LINES - 1), lines[LABEL_LINES - 1] + " …"];
}

// A Choice rule as a label: its Comment if the author wrote one, else JSONata's Condition, or
// JSONPath's Variable and comparison.
function ruleLabel(rule) {
  return typeof rule.Comment === "string" && rule.Comment ? rule.Comment : ruleText(rule);
}

function ruleText(rule) {
  if (typeof rule.Condition === "string") return rule.Condition.replace(/^\{%\s*|\s*%\}$/g, "");
  if (rule.And) return rule.And.map(ruleText).join(" and ");
  if (rule.Or) return rule.Or.map(ruleText).join(" or ");
  if (rule.Not) return "not " + ruleText(rule.Not);
  const ignored = new Set(["Variable", "Next", "Comment", "Assign", "Output"]);
  const operator = Object.keys(rule).find((key) => !ignored.has(key));
  const variable = (rule.Variable || "").replace(/^\$\.?/, "");
  return operator ? `${variable} ${operator} ${JSON.stringify(rule[operator])}` : variable;
}

// A state's name as the lines its box shows: a long name takes two lines of about half its width, so
// the many states a rank can hold side by side (a Choice's end states, a Map's branches) stay within
// a 1,400 px window at a size that reads.
const WRAPPED_NAME_CHARS = 18;
function nameLines(name) {
  if (name.length <= WRAPPED_NAME_CHARS) return [name];
  const words = name.split(" ");
  let best = [name];
  for (let cut = 1; cut < words.length; cut++) {
    const lines = [words.slice(0, cut).join(" "), words.slice(cut).join(" ")];
    if (Math.max(...lines.map((l) => l.length)) < Math.max(...best.map((l) => l.length))) best = lines;
  }
  return best;
}

function buildGraph(definition) {
  const g = new dagre.graphlib.Graph({ compound: true, multigraph: true });
  g.setGraph({ rankdir: "TB", nodesep: 20, ranksep: 54, edgesep: 8, marginx: 16, marginy: 16 });
  g.setNode("start", { kind: "terminal", label: "Start", width: 60, height: 28 });
  g.setNode("end", { kind: "terminal", label: "End", width: 60, height: 28 });
  let edges = 0;
  const edge = (from, to, label = "", kind = "next", minlen = 1, weight = 1) => {
    const lines = label ? labelLines(label) : [];
    // Measured at the labels' 11 px (the canvas measures 13 px), with room for the halo they are drawn with.
    const width = Math.max(0, ...lines.map((line) => measure.measureText(line).width * 11 / 13 + 8));
    // dagre keeps room for the label in the edge's middle rank; buildGraph then moves it beside the edge.
    g.setEdge(from, to, { kind, label, lines, width, height: lines.length * 13 + 2, labelpos: "c",
      labeloffset: LABEL_OFFSET, minlen, weight }, "e" + edges++);
  };
  const ends = (state) => state && (state.Type === "Succeed" || state.Type === "Fail" || (state.End && !state.Next));

  // Adds the states of one scope (the machine, a Map's processor, a Parallel branch) under
  // ``parent``; ``entry`` leads to its StartAt, and its last states lead to ``exit``.
  const addScope = (scope, parent, entry, exit) => {
    const states = scope.States || {};
    for (const [name, state] of Object.entries(states)) {
      const lines = nameLines(name);
      const width = Math.max(90, ...lines.map((line) => measure.measureText(line).width + 28));
      g.setNode("s:" + name, { kind: "state", name, type: state.Type, label: name, lines, width, height: 20 + 14 * lines.length });
      if (parent) g.setParent("s:" + name, parent);
    }
    if (scope.StartAt) edge(entry, "s:" + scope.StartAt);
    for (const [name, state] of Object.entries(states)) {
      const id = "s:" + name;
      let leaves = id;
      if (state.Type === "Map" || state.Type === "Parallel") {
        const box = "c:" + name;
        g.setNode(box, { kind: "box", label: `${name} (${state.Type})` });
        if (parent) g.setParent(box, parent);
        g.setParent(id, box);
        const join = "j:" + name;
        g.setNode(join, { kind: "join", width: 12, height: 12 });
        g.setParent(join, box);
        const bodies = state.Type === "Map" ? [state.ItemProcessor || state.Iterator || {}] : state.Branches || [];
        bodies.forEach((body, index) => {
          let bodyParent = box;
          if (state.Type === "Parallel") {
            bodyParent = `b:${name}:${index}`;
            g.setNode(bodyParent, { kind: "box", label: `branch ${index + 1}` });
            g.setParent(bodyParent, box);
          }
          addScope(body, bodyParent, id, join);
        });
        leaves = join;
      }
      if (state.Next) edge(leaves, "s:" + state.Next);
      if (state.End || state.Type === "Succeed" || state.Type === "Fail") edge(leaves, exit);
      if (state.Type === "Choice") {
        const branches = [...(state.Choices || []).map((rule) => [rule.Next, ruleLabel(rule)]),
          ...(state.Default ? [[state.Default, "otherwise"]] : [])];
        // Many branches ending the machine would sit side by side in one row, wider than the page:
        // every other one goes a row lower (a heavy edge keeps each as close to the Choice as allowed).
        const stagger = branches.filter(([next]) => ends(states[next])).length > 3;
        let ending = 0;
        for (const [next, label] of branches) {
          const lower = stagger && ends(states[next]) && ending++ % 2 === 1;
          edge(id, "s:" + next, label, "next", lower ? 2 : 1, stagger ? 4 : 1);
        }
      }
      (state.Catch || []).forEach((handler) => edge(id, "s:" + handler.Next, (handler.ErrorEquals || []).join(", "), "catch"));
    }
  };
  addScope(definition, null, "start", "end");
  // A label is drawn on its edge's middle (dagre's "c": the narrowest drawing), then moved beside its
  // edge; one with no clear place nearby is laid out again beside its edge (dagre's "r", which keeps
  // the room free in its rank but widens the drawing, so only where needed).
  for (let pass = 0; pass < 3; pass++) {
    dagre.layout(g);
    const crowded = clearLabels(g);
    if (!crowded.length) break;
    for (const e of crowded) g.edge(e).labelpos = "r";
  }
  return g;
}

// Does the segment from a to b pass through the rectangle r (Liang-Barsky clipping)?
function crosses(a, b, r) {
  let t0 = 0, t1 = 1;
  const dx = b.x - a.x, dy = b.y - a.y;
  for (const [p, q] of [[-dx, a.x - r.left], [dx, r.right - a.x], [-dy, a.y - r.top], [dy, r.bottom - a.y]]) {
    if (p === 0) { if (q < 0) return false; continue; }
    const t = q / p;
    if (p < 0) { if (t > t1) return false; t0 = Math.max(t0, t); } else { if (t < t0) return false; t1 = Math.min(t1, t); }
  }
  return true;
}

// Moves each edge label beside its edge, near it, to the first place no edge, state or other label
// touches (dagre keeps a label's room free only within its rank: an edge running diagonally between
// ranks may still cross it); returns the edges whose labels found none (left where dagre put them).
function clearLabels(g) {
  const { width, height } = g.graph();
  const rect = (x, y, w, h) => ({ left: x - w / 2, right: x + w / 2, top: y - h / 2, bottom: y + h / 2 });
  const overlaps = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
  const segments = g.edges().flatMap((e) => g.edge(e).points.slice(1).map((p, i) => [g.edge(e).points[i], p]));
  const nodes = g.nodes().filter((id) => g.node(id).kind !== "box").map((id) => { const n = g.node(id); return rect(n.x, n.y, n.width, n.height); });
  const placed = [];
  const crowded = [];
  // Right of the drawing or below it is fine: the drawing grows to hold the label.
  const clear = (r) => r.left >= 0 && r.top >= 0
    && !segments.some(([a, b]) => crosses(a, b, r)) && !nodes.some((n) => overlaps(n, r)) && !placed.some((l) => overlaps(l, r));
  for (const e of g.edges()) {
    const data = g.edge(e);
    if (!data.lines.length) continue;
    // A margin of 2 px all round: touching is as hard to read as crossing.
    const w = data.width + 4, h = data.height + 4;
    const candidates = [[data.x, data.y]];
    // Nearest the middle of each stretch first, then further out, then further from the edge.
    for (const away of [LABEL_OFFSET, 3 * LABEL_OFFSET]) {
      for (const t of [0.5, 0.4, 0.6, 0.3, 0.7, 0.2, 0.8, 0.1, 0.9]) {
        for (const [a, b] of data.points.slice(1).map((p, i) => [data.points[i], p])) {
          const x = a.x + (b.x - a.x) * t, y = a.y + (b.y - a.y) * t;
          candidates.push([x + w / 2 + away, y], [x - w / 2 - away, y], [x, y - h / 2 - away], [x, y + h / 2 + away]);
        }
      }
    }
    const found = candidates.find(([x, y]) => clear(rect(x, y, w, h)));
    if (found) [data.x, data.y] = found;
    else crowded.push(e);
    placed.push(rect(data.x, data.y, w, h));
  }
  g.graph().width = Math.max(width, ...placed.map((r) => r.right + 2));
  g.graph().height = Math.max(height, ...placed.map((r) => r.bottom + 2));
  return crowded;
}

function svg(tag, attributes = {}, parent = null) {
  const element = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attributes)) element.setAttribute(key, value);
  if (parent) parent.appendChild(element);
  return element;
}

// Renders ``definition`` into ``container``; returns { update(states) } to colour the states by
// outcome (the console's ``states`` by name) without drawing again. ``onSelect(name)`` on a click.
function drawGraph(container, definition, onSelect) {
  const g = buildGraph(definition);
  const { width, height } = g.graph();
  // Scaled down to the width it is given, never up, and never below 70% (where 13 px labels are still read).
  const root = svg("svg", {
    class: "graph", width: "100%", viewBox: `0 0 ${width} ${height}`, style: `max-width: ${width}px; min-width: ${Math.round(width * 0.7)}px`,
  });
  const defs = svg("defs", {}, root);
  const marker = svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto" }, defs);
  svg("path", { d: "M0,0 L10,5 L0,10 z", class: "arrowhead" }, marker);

  const boxes = g.nodes().filter((id) => g.node(id).kind === "box");
  // Outer boxes first, so inner ones are drawn on top.
  const depth = (id) => { let d = 0; for (let p = g.parent(id); p; p = g.parent(p)) d++; return d; };
  boxes.sort((a, b) => depth(a) - depth(b));
  for (const id of boxes) {
    const n = g.node(id);
    const group = svg("g", { class: "box" }, root);
    svg("rect", { x: n.x - n.width / 2, y: n.y - n.height / 2 - 10, width: n.width, height: n.height + 10, rx: 8 }, group);
    svg("text", { x: n.x - n.width / 2 + 8, y: n.y - n.height / 2 + 4, class: "box-label" }, group).textContent = n.label;
  }
  for (const e of g.edges()) {
    const data = g.edge(e);
    const points = data.points.map((p) => `${p.x},${p.y}`).join(" L");
    svg("path", { d: "M" + points, class: `edge ${data.kind}`, "marker-end": "url(#arrow)" }, root);
    if (data.lines.length) {
      const text = svg("text", { x: data.x, y: data.y - (data.lines.length - 1) * 6.5 + 4, class: "edge-label" }, root);
      data.lines.forEach((line, index) => { svg("tspan", { x: data.x, dy: index ? 13 : 0 }, text).textContent = line; });
      svg("title", {}, text).textContent = data.label;
    }
  }
  const states = new Map();
  for (const id of g.nodes()) {
    const n = g.node(id);
    if (n.kind === "box") continue;
    const group = svg("g", { class: `node ${n.kind}`, transform: `translate(${n.x - n.width / 2},${n.y - n.height / 2})` }, root);
    if (n.kind === "join") {
      svg("circle", { cx: n.width / 2, cy: n.height / 2, r: 5 }, group);
      continue;
    }
    svg("rect", { width: n.width, height: n.height, rx: n.kind === "terminal" ? n.height / 2 : 6 }, group);
    const lines = n.lines || [n.label];
    const label = svg("text", { x: n.width / 2, y: n.height / 2 + 4 - (lines.length - 1) * 7, "text-anchor": "middle" }, group);
    lines.forEach((line, index) => { svg("tspan", { x: n.width / 2, dy: index ? 14 : 0 }, label).textContent = line; });
    if (n.kind === "state") {
      group.dataset.state = n.name;
      group.dataset.status = "";
      svg("title", {}, group).textContent = `${n.name} (${n.type})`;
      const count = svg("text", { x: n.width - 4, y: -3, "text-anchor": "end", class: "count" }, group);
      group.addEventListener("click", () => onSelect(n.name));
      states.set(n.name, { group, count });
    }
  }
  container.replaceChildren(root);
  // Ask the page's columns for the graph's natural width: a wide graph takes a row of its own
  // (what sits beside it wraps below) instead of shrinking past reading.
  const column = container.closest(".columns > *");
  if (column) column.style.flexBasis = `${Math.ceil(width) + 40}px`;
  return {
    update(outcomes, selected) {
      for (const [name, { group, count }] of states) {
        const outcome = outcomes[name];
        group.dataset.status = outcome ? outcome.status : "";
        group.classList.toggle("selected", name === selected);
        count.textContent = outcome && outcome.entered > 1 ? `×${outcome.entered}` : "";
      }
    },
  };
}
