// The Slack panel: the stand-in's messages drawn as a person sees them in Slack (mrkdwn text with
// mentions and links, Block Kit sections and buttons). A click on a button does what Slack does:
// a link button opens its url in a new tab, and where the app's interactivity is set up the
// stand-in sends the app the signed block_actions request (POST /api/slack/click).
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
