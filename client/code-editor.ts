import { html } from '@codemirror/lang-html';
import { markdown } from '@codemirror/lang-markdown';
import { EditorView, basicSetup } from 'codemirror';
import { livePreview } from './lib/preview';

/**
 * CodeMirror 6 on a design's Markdown or HTML (the page's `textarea[data-code-editor]`, whose
 * `data-language` names the language). Progressive: the textarea is the form's field and stays
 * so; the editor writes every change back into it, and without script the plain textarea works.
 *
 * The editor lives in a shadow root of its own. CodeMirror styles itself at run time (style-mod):
 * in a document it would add `<style>` elements, which the dashboard's CSP (`style-src 'self'`,
 * no nonce) refuses; in a shadow root it uses a constructed style sheet adopted by that root
 * (`adoptedStyleSheets`), which the policy does not govern, and page styles stay out of it.
 */
const THEME = EditorView.theme({
  '&': { backgroundColor: '#ffffff', color: '#111827', border: '1px solid #6b7280', borderRadius: '4px', fontSize: '14px' },
  '&.cm-focused': { outline: '2px solid #2563eb', outlineOffset: '1px' },
  '.cm-scroller': { fontFamily: 'ui-monospace, Menlo, Consolas, monospace', minHeight: '22rem', maxHeight: '70vh', overflow: 'auto' },
  '.cm-gutters': { backgroundColor: '#f3f4f6', color: '#4b5563', borderRight: '1px solid #d1d5db' },
  '.cm-activeLineGutter': { backgroundColor: '#e5e7eb' },
});

/**
 * Typing over a selection: done by the editor, not left to the browser. Chrome's own editing
 * would keep the look of the replaced text by writing a `style` attribute into the editor's DOM,
 * which the CSP refuses (a console error; CodeMirror then redraws the line anyway). Composition
 * (an IME) and the keys the editor's keymap handles (Enter, Backspace, Delete) are not affected.
 */
const typeOverSelection = EditorView.domEventHandlers({
  beforeinput(event, view) {
    if (event.inputType !== 'insertText' || !event.data || view.composing || view.state.selection.ranges.every((r) => r.empty)) return false;
    event.preventDefault();
    view.dispatch(view.state.replaceSelection(event.data), { userEvent: 'input.type', scrollIntoView: true });
    return true;
  },
});

function attach(textarea: HTMLTextAreaElement): void {
  const form = textarea.form;
  const label = textarea.labels?.[0]?.textContent?.replace(/\s*\*\s*$/, '').trim() || 'Source';
  const host = document.createElement('div');
  host.className = 'code-editor';
  const root = host.attachShadow({ mode: 'open' });
  textarea.after(host);
  const preview = form ? livePreview(form) : undefined;
  const errors = textarea.getAttribute('aria-describedby')?.split(/\s+/).map((id) => document.getElementById(id)?.textContent?.trim() ?? '').filter(Boolean).join(' ');
  const view = new EditorView({
    doc: textarea.value,
    root,
    parent: root,
    extensions: [
      basicSetup,
      textarea.dataset.language === 'markdown' ? markdown() : html(),
      EditorView.lineWrapping,
      THEME,
      typeOverSelection,
      // The label and the messages of the textarea, which a reference by id cannot reach in a shadow root.
      EditorView.contentAttributes.of({
        'aria-label': label,
        ...(errors ? { 'aria-description': errors } : {}),
        ...(textarea.getAttribute('aria-invalid') === 'true' ? { 'aria-invalid': 'true' } : {}),
      }),
      EditorView.updateListener.of((update) => {
        if (!update.docChanged) return;
        textarea.value = update.state.doc.toString();
        preview?.schedule();
      }),
    ],
  });
  textarea.hidden = true;
  // The label and the error summary's link lead to the editor now.
  textarea.labels?.forEach((l) => l.addEventListener('click', () => view.focus()));
  window.addEventListener('hashchange', () => {
    if (location.hash === `#${textarea.id}`) view.focus();
  });
  if (location.hash === `#${textarea.id}`) view.focus();
}

for (const textarea of document.querySelectorAll<HTMLTextAreaElement>('textarea[data-code-editor]')) attach(textarea);
