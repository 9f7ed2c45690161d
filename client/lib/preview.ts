/**
 * The design editors' live preview. The page's form has an "Update preview" button that posts the
 * form to the preview frame (formaction + formtarget: it works without script too). With script,
 * each update posts into a new frame, hidden until it has loaded, which then replaces the shown
 * one: the page does not flicker, and since a new frame's first navigation replaces its blank
 * document, the updates add no entries to the browser's history (Back leaves the editor).
 */
const DELAY_MS = 600;

export interface LivePreview {
  /** Updates the preview soon (the last of a burst of calls wins). */
  schedule(): void;
}

export function livePreview(form: HTMLFormElement): LivePreview {
  const button = form.querySelector<HTMLButtonElement>('button[data-preview]');
  const found = document.querySelector<HTMLElement>('[data-preview-box]');
  if (!button || !found) return { schedule: () => undefined };
  const box: HTMLElement = found;
  const original = button.formTarget;
  let timer: number | undefined;
  let loading: HTMLIFrameElement | undefined;
  let again = false;
  let n = 0;

  const current = () => [...box.querySelectorAll<HTMLIFrameElement>('iframe')].filter((f) => f !== loading);

  function update(): void {
    if (loading) {
      again = true;
      return;
    }
    const shown = current();
    const frame = document.createElement('iframe');
    const model = shown[shown.length - 1];
    if (model) {
      frame.className = model.className;
      frame.title = model.title;
    }
    n += 1;
    frame.name = `${original || 'design-preview'}-${n}`;
    frame.hidden = true;
    // Its blank first document loads as it is inserted (before the listener below): the post replaces it.
    box.append(frame);
    loading = frame;
    button!.formTarget = frame.name;
    try {
      form.requestSubmit(button);
    } finally {
      button!.formTarget = original;
    }
    frame.addEventListener(
      'load',
      () => {
        for (const old of current()) old.remove();
        frame.hidden = false;
        loading = undefined;
        if (again) {
          again = false;
          update();
        }
      },
      { once: true },
    );
  }

  button.addEventListener('click', (event) => {
    event.preventDefault();
    window.clearTimeout(timer);
    update();
  });

  // The page came back refused with what was typed: its frame still shows the design as it was.
  if (box.dataset.previewStale) update();

  return {
    schedule() {
      window.clearTimeout(timer);
      timer = window.setTimeout(update, DELAY_MS);
    },
  };
}
