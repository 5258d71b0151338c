// reaction-picker.js: the small popover of reaction kinds the console offers (PROTOCOL.md
// §15 takes any kind of 1–64 bytes; the console picks from a few emoji), placed beside the
// button that opened it. One picker for the page; Escape or a click elsewhere closes it.

export const reactionKinds = ["👍", "❤️", "😂", "🎉", "😮", "👀"];

export class ReactionPicker {
  /** `element`: the page's empty picker container (#reaction-picker). */
  constructor(element) {
    this.element = element;
    this.onPick = null;
    this.anchor = null;
    element.replaceChildren(...reactionKinds.map((kind) => {
      const button = document.createElement("button");
      button.type = "button";
      button.className = "pick";
      button.dataset.kind = kind;
      button.title = `React with ${kind}`;
      button.textContent = kind;
      button.addEventListener("click", () => {
        const pick = this.onPick;
        this.close();
        pick?.(kind);
      });
      return button;
    }));
    document.addEventListener("keydown", (event) => {
      if (event.key === "Escape") this.close();
    });
    document.addEventListener("click", (event) => {
      if (!this.element.hidden && !this.element.contains(event.target) && event.target !== this.anchor
          && !this.anchor?.contains(event.target)) this.close();
    });
  }

  get isOpen() {
    return !this.element.hidden;
  }

  /** Opens beside `anchor`; `onPick(kind)` is called with the kind clicked. */
  open(anchor, onPick) {
    this.anchor = anchor;
    this.onPick = onPick;
    this.element.hidden = false;
    const box = anchor.getBoundingClientRect();
    const width = this.element.offsetWidth;
    const left = Math.max(8, Math.min(box.left, window.innerWidth - width - 8));
    const above = box.top - this.element.offsetHeight - 6;
    this.element.style.setProperty("left", `${left}px`);
    this.element.style.setProperty("top", `${above > 8 ? above : box.bottom + 6}px`);
    this.element.querySelector("button")?.focus();
  }

  close() {
    this.element.hidden = true;
    this.onPick = null;
    this.anchor = null;
  }
}
