// The Phone and E-mail pages: what End User Messaging texted and called, per phone number, with a box
// to text the account's number back from that phone (POST /api/phone/reply, published to the number's
// two-way SNS topic as AWS publishes a reply); and every mail SES sent.
"use strict";

async function phonePage() {
  const { numbers } = await api("/api/phone/numbers");
  const own = new Set(numbers);
  const phones = el("div", { id: "phones" });
  const forms = new Map(); // phone -> its reply form, kept across redraws so typing is not lost
  const outcome = el("p", { id: "reply-outcome", class: "muted" });
  const send = async (from, text) => {
    try {
      const sent = await api("/api/phone/reply", { from, body: text });
      outcome.className = sent.refused ? "error" : "muted";
      outcome.textContent = sent.published
        ? `${from} texted ${sent.to}: published to the number's two-way topic as message ${sent.published}`
        : sent.refused ? `${from} texted ${sent.to}, but End User Messaging may not publish to the topic: ${sent.refused}`
          : `${from} texted ${sent.to}: the number has no two-way SMS topic, so the reply reached no one`;
    } catch (failure) {
      outcome.className = "error";
      outcome.textContent = failure.message;
    }
    refresh();
  };
  const replyForm = (phone) => {
    if (!forms.has(phone)) {
      const text = el("input", { class: "reply-text", size: "40", placeholder: "12a", "aria-label": `reply from ${phone}` });
      forms.set(phone, el("form", { class: "reply-form", "data-phone": phone, onsubmit: (event) => {
        event.preventDefault(); send(phone, text.value); text.value = "";
      } }, text, el("button", { type: "submit", class: "primary" }, "Reply")));
    }
    return forms.get(phone);
  };
  const from = el("input", { id: "new-from", size: "16", placeholder: "+4915112345678", "aria-label": "from number" });
  const text = el("input", { id: "new-text", size: "40", placeholder: "STOP", "aria-label": "text" });
  view.replaceChildren(el("h1", {}, "Phone"),
    el("p", { class: "muted" }, `Texts and calls End User Messaging sent from the account's number (${numbers.join(", ")}), ` +
      "and texts to it, per phone. A reply is a text from that phone to the account's number."),
    el("div", { class: "card" }, el("h2", {}, "Text the account's number from any phone"),
      el("form", { id: "new-text-form", class: "reply-form", onsubmit: (event) => { event.preventDefault(); send(from.value.trim(), text.value); } },
        el("label", {}, "From ", from), el("label", {}, "Text ", text), el("button", { type: "submit", class: "primary" }, "Send")),
      outcome),
    phones);
  let drawn = "";
  const refresh = async () => {
    const log = await api("/api/phone");
    const state = JSON.stringify(log);
    if (state === drawn) return;
    drawn = state;
    const byPhone = new Map();
    for (const entry of log) {
      const phone = own.has(entry.from) ? entry.to : entry.from;
      if (!byPhone.has(phone)) byPhone.set(phone, []);
      byPhone.get(phone).push(entry);
    }
    phones.replaceChildren(...(byPhone.size ? [...byPhone].map(([phone, entries]) => el("section", { class: "card", "data-phone": phone },
      el("h2", {}, phone),
      el("ol", { class: "phone-log plain" }, ...entries.map((entry) => {
        const incoming = own.has(entry.to);
        return el("li", { class: incoming ? "from-phone" : "to-phone", "data-kind": entry.kind },
          el("span", { class: `badge kind-${entry.kind}` }, entry.kind === "voice" ? "call" : "text"),
          el("span", { class: "muted" }, incoming ? ` ${phone} → ${entry.to}: ` : ` ${entry.from} → ${phone}: `),
          el("span", { class: "phone-body" }, entry.body));
      })),
      replyForm(phone)))
      : [el("p", { class: "muted" }, "No text or call yet.")]));
  };
  await refresh();
  pageTimer = setInterval(() => refresh().catch(() => {}), 1000);
}

async function emailPage() {
  const rows = el("tbody");
  view.replaceChildren(el("h1", {}, "E-mail"),
    el("p", { class: "muted" }, "Every mail SES sent, one row a recipient, oldest first, with its text body."),
    el("table", { id: "email" }, el("thead", {}, el("tr", {}, el("th", {}, "To"), el("th", {}, "From"), el("th", {}, "Subject"), el("th", {}, "Text"))),
      rows));
  let drawn = "";
  const refresh = async () => {
    const mail = await api("/api/email");
    const state = JSON.stringify(mail);
    if (state === drawn) return;
    drawn = state;
    rows.replaceChildren(...(mail.length ? mail.map((m) => el("tr", { "data-to": m.to },
      el("td", {}, m.to), el("td", {}, m.from), el("td", { class: "subject" }, m.subject), el("td", {}, el("pre", {}, m.text))))
      : [el("tr", {}, el("td", { colspan: "4", class: "muted" }, "No mail yet."))]));
  };
  await refresh();
  pageTimer = setInterval(() => refresh().catch(() => {}), 1000);
}
