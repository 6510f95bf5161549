// The Slack panel: the stand-in's messages drawn as a person sees them in Slack (mrkdwn text with
// mentions and links, Block Kit sections and buttons). A click on a button does what Slack does:
// a link button opens its url in a new tab, and where the app's interactivity is set up the
// stand-in sends the app the signed block_actions request (POST /api/slack/click). A box types a
// slash command as a chosen member (POST /api/slack/commands) and shows what the person would see.
"use strict";

// mrkdwn as Slack renders it: <@U123> mentions, <#C1|name> channels, <!here>, <url|text> links,
// *bold*, _italic_, ~strike~, `code`, and &amp; &lt; &gt; escapes. Built as DOM nodes, never HTML.
function mrkdwn(text) {
  const out = document.createDocumentFragment();
  const unescape = (s) => s.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&");
  const styled = (s) => {
    const parts = s.split(/(`[^`\n]+`|\*[^*\n]+\*|_[^_\n]+_|~[^~\n]+~|\n)/);
    for (const part of parts) {
      if (!part) continue;
      const inner = unescape(part.slice(1, -1));
      if (part === "\n") out.append(el("br"));
      else if (part.startsWith("`")) out.append(el("code", {}, inner));
      else if (part.startsWith("*")) out.append(el("strong", {}, inner));
      else if (part.startsWith("_")) out.append(el("em", {}, inner));
      else if (part.startsWith("~")) out.append(el("del", {}, inner));
      else out.append(unescape(part));
    }
  };
  const source = String(text ?? "");
  let cursor = 0;
  for (const match of source.matchAll(/<([^<>]+)>/g)) {
    styled(source.slice(cursor, match.index));
    cursor = match.index + match[0].length;
    const [target, label] = match[1].split("|", 2);
    if (target.startsWith("@")) out.append(el("span", { class: "mention", title: target.slice(1) }, "@" + (label || target.slice(1))));
    else if (target.startsWith("#")) out.append(el("span", { class: "mention" }, "#" + (label || target.slice(1))));
    else if (target.startsWith("!")) out.append(el("span", { class: "mention" }, "@" + (label || target.slice(1).split("^")[0])));
    else out.append(el("a", { href: unescape(target), target: "_blank", rel: "noopener" }, unescape(label || target)));
  }
  styled(source.slice(cursor));
  return out;
}

function textObject(object) {
  if (!object) return "";
  return object.type === "mrkdwn" ? mrkdwn(object.text) : document.createTextNode(object.text ?? "");
}

// One message: its blocks if it has any (Slack shows those, with text as the notification), else its text.
function slackMessage(post, message, onClick) {
  const body = el("div", { class: "slack-message" });
  if (message === null) {
    body.append(el("p", { class: "muted" }, "(message deleted by the app)"));
    return body;
  }
  const blocks = Array.isArray(message.blocks) ? message.blocks : [];
  if (!blocks.length) body.append(el("p", {}, mrkdwn(message.text)));
  blocks.forEach((block, b) => {
    if (block.type === "section") {
      body.append(el("div", { class: "slack-section" }, block.text ? el("p", {}, textObject(block.text)) : null,
        ...(block.fields || []).map((field) => el("p", { class: "slack-field" }, textObject(field)))));
    } else if (block.type === "header") {
      body.append(el("h3", { class: "slack-header" }, textObject(block.text)));
    } else if (block.type === "context") {
      body.append(el("p", { class: "slack-context muted" }, ...(block.elements || []).map((e) => e.type === "image" ? "" : textObject(e))));
    } else if (block.type === "divider") {
      body.append(el("hr"));
    } else if (block.type === "actions") {
      body.append(el("div", { class: "slack-actions" }, ...(block.elements || []).map((element, e) => {
        if (element.type !== "button") return null;
        const label = element.text ? element.text.text : "button";
        const attributes = { class: `slack-button ${element.style || ""}`, "data-block": b, "data-element": e,
          "data-action": element.action_id || "" };
        const click = () => onClick(post.seq, b, e);
        // A link button opens its url as a link does (a new tab); the click is also reported.
        return element.url
          ? el("a", { ...attributes, href: element.url, target: "_blank", rel: "noopener", onclick: click }, label)
          : el("button", { ...attributes, type: "button", onclick: click }, label);
      })));
    }
  });
  return body;
}

// Fills ``list`` (an <ol>) with the posts, newest first; returns a function that refreshes it.
function slackPanel(list) {
  const outcome = new Map(); // seq -> what the last click did, shown under the message
  const click = async (seq, block, element) => {
    try {
      const clicked = await api("/api/slack/click", { seq, block, element });
      const interaction = clicked.interaction;
      outcome.set(seq, interaction
        ? `Sent the app a block_actions request: HTTP ${interaction.status ?? "no answer"}`
        : clicked.interactive ? "" : "No Slack app interactivity is set up: nothing sent to the app");
    } catch (failure) {
      outcome.set(seq, failure.message);
    }
    refresh();
  };
  let drawn = "";
  const refresh = async () => {
    const posts = await api("/api/slack");
    // Drawn again only when something changed: a button replaced under the pointer loses its click.
    const state = JSON.stringify([posts, [...outcome]]);
    if (state === drawn) return;
    drawn = state;
    list.replaceChildren(...posts.map((post) => {
      const message = post.shown;
      const edited = JSON.stringify(post.shown) !== JSON.stringify(post.body);
      const item = el("li", { value: post.seq, "data-seq": post.seq, class: edited ? "edited" : "" },
        el("span", { class: "badge" }, String(post.status)), edited && message !== null ? el("span", { class: "muted" }, " (updated by the app)") : null,
        typeof post.body === "object" && post.body !== null ? slackMessage(post, message, click) : el("p", {}, String(post.text)));
      if (outcome.get(post.seq)) item.append(el("p", { class: "slack-outcome muted" }, outcome.get(post.seq)));
      return item;
    }));
  };
  return refresh;
}

// What the person who typed a slash command sees: the app's answer (its text as mrkdwn; ephemeral,
// Slack's default for a command's answer, is marked "Only visible to you"), or Slack's own words when
// the command reached no app, or the app's failure.
function slashAnswer(typed, result) {
  const box = el("div", { id: "slash-answer", "data-sent": String(result.sent), "data-status": String(result.status) },
    el("p", { class: "muted" }, `${typed.user} typed ${typed.command} ${typed.text}`.trim()));
  if (!result.sent) {
    box.append(el("p", { class: "slash-answer-text" }, result.answer),
      el("p", { class: "muted" }, "Slack sent nothing: the app's manifest declares no such command."));
    return box;
  }
  if (result.status !== 200) {
    box.append(el("p", { class: "error" }, `The app answered HTTP ${result.status ?? "nothing"}`), el("pre", {}, result.answer));
    return box;
  }
  let message = null;
  try { message = JSON.parse(result.answer); } catch { message = null; }
  if (message === null || typeof message !== "object") {
    box.append(el("p", { class: "slash-answer-text" }, result.answer || "(an empty 200: nothing shown)"));
    return box;
  }
  const ephemeral = (message.response_type || "ephemeral") === "ephemeral";
  box.append(el("span", { class: "badge" }, ephemeral ? "Only visible to you" : "Posted in the channel"),
    el("div", { class: "slack-message slash-answer-text" }, el("p", {}, mrkdwn(message.text))));
  return box;
}

// The box: member id, command (the declared ones offered), text, Send; the answer shown under it.
async function slashCommandBox() {
  const { declared } = await api("/api/slack/commands");
  const user = el("input", { id: "slash-user", value: "U0123ABCD", size: "12", "aria-label": "member id" });
  const command = el("input", { id: "slash-command", value: Object.keys(declared)[0] || "/", size: "12",
    list: "slash-declared", "aria-label": "command" });
  const text = el("input", { id: "slash-text", size: "48", placeholder: "cover primary 2026-11-28T09:00 2026-11-28T17:00",
    "aria-label": "text" });
  const answer = el("div");
  const send = async (event) => {
    event.preventDefault();
    const typed = { user: user.value, command: command.value, text: text.value };
    try {
      answer.replaceChildren(slashAnswer(typed, await api("/api/slack/commands", typed)));
    } catch (failure) {
      answer.replaceChildren(el("p", { id: "slash-answer", class: "error" }, failure.message));
    }
  };
  const declaredList = Object.entries(declared).map(([name, url]) => `${name} → ${url}`).join("; ");
  return el("div", { class: "card" }, el("h2", {}, "Type a slash command as a member"),
    el("p", { class: "muted" }, "Sent as Slack sends it: a form signed with the app's signing secret, stamped with the " +
      `simulated clock, to the URL the app's manifest gives the command (${declaredList || "it declares none"}).`),
    el("form", { id: "slash-form", class: "slash-form", onsubmit: send },
      el("datalist", { id: "slash-declared" }, ...Object.keys(declared).map((name) => el("option", { value: name }))),
      el("label", {}, "Member ", user), el("label", {}, "Command ", command), el("label", {}, "Text ", text),
      el("button", { id: "slash-send", type: "submit", class: "primary" }, "Send")),
    answer);
}
