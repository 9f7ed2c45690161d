import { render, type ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import {
  BLOCK_TYPES,
  controlId,
  getIn,
  isObject,
  LEAF_TYPES,
  pathKey,
  setIn,
  SETTINGS_FIELDS,
  typeOf,
  type BlockType,
  type FieldSpec,
  type Json,
  type JsonObject,
} from './lib/blocks';
import { livePreview, type LivePreview } from './lib/preview';

/**
 * The block editor (issue 34): the design's block document edited as a list of blocks, each with
 * a form of its fields, and the document's settings. It mounts on `#block-editor` of a design page
 * and writes the document into the form's `source` textarea on every change, so the form posts
 * the same document the API takes, and the server's validation judges it. Without script the
 * textarea is the editor.
 *
 * Blocks are added, removed and reordered by buttons (so by keyboard: focus follows the block it
 * moved, and a live region says what happened). The server's messages come in `data-errors`
 * (`blocks.3.href` → messages) and show beside their fields until the field changes.
 */
type Path = Array<string | number>;
type Errors = Record<string, string[]>;

interface Ctx {
  doc: JsonObject;
  errors: Errors;
  open: Set<string>;
  change(path: Path, value: Json | undefined): void;
  /** A list's items moved: `map` gives each old index its new one (null: removed). */
  restructure(listPath: Path, next: Json[], map: (i: number) => number | null, say: string, focus?: string): void;
  /** Opens or closes a block's form (`force`: open it). */
  toggle(blockKey: string, force?: boolean): void;
}

/** Every key under `listKey.i` re-indexed by `map` (messages and open blocks follow their block). */
function remapKeys(keys: string[], listKey: string, map: (i: number) => number | null): Map<string, string | null> {
  const out = new Map<string, string | null>();
  const prefix = `${listKey}.`;
  for (const key of keys) {
    if (!key.startsWith(prefix)) continue;
    const rest = key.slice(prefix.length);
    const m = /^(\d+)(.*)$/.exec(rest);
    if (!m) continue;
    const to = map(Number(m[1]));
    out.set(key, to === null ? null : `${prefix}${to}${m[2]}`);
  }
  return out;
}

function remapErrors(errors: Errors, listKey: string, map: (i: number) => number | null): Errors {
  const moves = remapKeys(Object.keys(errors), listKey, map);
  const out: Errors = {};
  for (const [k, v] of Object.entries(errors)) {
    if (!moves.has(k)) out[k] = v;
  }
  for (const [from, to] of moves) if (to !== null) out[to] = errors[from];
  return out;
}

function remapOpen(open: Set<string>, listKey: string, map: (i: number) => number | null): Set<string> {
  const moves = remapKeys([...open], listKey, map);
  const out = new Set([...open].filter((k) => !moves.has(k)));
  for (const to of moves.values()) if (to !== null) out.add(to);
  return out;
}

/** The messages of exactly this key (and, for a control holding a list of strings, its items'). */
function messagesOf(errors: Errors, key: string, items = false): string[] {
  return Object.entries(errors)
    .filter(([k]) => k === key || (items && new RegExp(`^${key.replace(/\./g, '\\.')}\\.\\d+$`).test(k)))
    .flatMap(([, v]) => v);
}

function Messages({ id, messages }: { id: string; messages: string[] }) {
  if (!messages.length) return null;
  return (
    <ul class="field-errors" id={id}>
      {messages.map((m) => (
        <li>{m}</li>
      ))}
    </ul>
  );
}

/** A labelled control with its hint and messages (the same markup as the server's form-kit `Field`). */
function FieldBox({ id, label, hint, messages, children, check }: { id: string; label: string; hint?: string; messages: string[]; children: (a11y: Record<string, string | undefined>) => ComponentChildren; check?: boolean }) {
  const described = [hint ? `${id}-hint` : '', messages.length ? `${id}-errors` : ''].filter(Boolean).join(' ') || undefined;
  return (
    <div class={`field${messages.length ? ' invalid' : ''}${check ? ' check' : ''}`}>
      <label for={id}>{label}</label>
      {hint ? (
        <p class="hint" id={`${id}-hint`}>
          {hint}
        </p>
      ) : null}
      {children({ id, 'aria-describedby': described, 'aria-invalid': messages.length ? 'true' : undefined })}
      <Messages id={`${id}-errors`} messages={messages} />
    </div>
  );
}

const asText = (v: Json | undefined) => (v === undefined || v === null ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v));

/** A colour as `<input type=color>` takes it (#rrggbb), or black. */
function pickerValue(v: string): string {
  if (/^#[0-9a-f]{6}$/i.test(v)) return v.toLowerCase();
  if (/^#[0-9a-f]{3}$/i.test(v)) return `#${[...v.slice(1)].map((c) => c + c).join('')}`.toLowerCase();
  return '#000000';
}

function Control({ spec, path, ctx, level }: { spec: FieldSpec; path: Path; ctx: Ctx; level: number }) {
  const value = getIn(ctx.doc, path);
  const id = controlId(path);
  const key = pathKey(path);
  const set = (v: Json | undefined) => ctx.change(path, v);
  const optional = 'optional' in spec && spec.optional;
  switch (spec.kind) {
    case 'text':
    case 'url':
    case 'textarea':
    case 'color': {
      const write = (raw: string) => set(raw === '' && optional ? undefined : raw);
      const text = asText(value);
      return (
        <FieldBox id={id} label={spec.label} hint={spec.hint ?? (spec.kind === 'color' ? 'Written #rgb or #rrggbb; empty for the default.' : undefined)} messages={messagesOf(ctx.errors, key)}>
          {(a11y) =>
            spec.kind === 'textarea' ? (
              <textarea {...a11y} rows={3} value={text} onInput={(e) => write(e.currentTarget.value)} />
            ) : spec.kind === 'color' ? (
              <div class="color-control">
                <input {...a11y} type="text" spellcheck={false} autoComplete="off" placeholder="#rrggbb" value={text} onInput={(e) => write(e.currentTarget.value.trim())} />
                <input type="color" aria-label={`${spec.label}: choose`} value={pickerValue(text)} onInput={(e) => write(e.currentTarget.value)} />
              </div>
            ) : (
              <input {...a11y} type={spec.kind === 'url' ? 'url' : 'text'} spellcheck={spec.kind !== 'url'} value={text} onInput={(e) => write(e.currentTarget.value)} />
            )
          }
        </FieldBox>
      );
    }
    case 'number':
      return (
        <FieldBox id={id} label={spec.label} hint={spec.hint ?? `From ${spec.min} to ${spec.max}.`} messages={messagesOf(ctx.errors, key)}>
          {(a11y) => (
            <input
              {...a11y}
              type="text"
              inputMode="numeric"
              autoComplete="off"
              value={asText(value)}
              onInput={(e) => {
                const raw = e.currentTarget.value.trim();
                if (raw === '') set(optional ? undefined : '');
                else set(/^-?\d+$/.test(raw) ? Number(raw) : raw);
              }}
            />
          )}
        </FieldBox>
      );
    case 'select':
      return (
        <FieldBox id={id} label={spec.label} messages={messagesOf(ctx.errors, key)}>
          {(a11y) => (
            <select
              {...a11y}
              value={asText(value)}
              onChange={(e) => {
                const raw = e.currentTarget.value;
                set(raw === '' ? undefined : spec.numeric ? Number(raw) : raw);
              }}
            >
              {/* A value the editor does not offer stays chosen (the server names it). */}
              {value !== undefined && !spec.choices.some(([v]) => v === asText(value)) ? <option value={asText(value)}>{asText(value)}</option> : null}
              {spec.choices.map(([v, label]) => (
                <option value={v}>{label}</option>
              ))}
            </select>
          )}
        </FieldBox>
      );
    case 'lines':
      return (
        <FieldBox id={id} label={spec.label} hint={spec.hint} messages={messagesOf(ctx.errors, key, true)}>
          {(a11y) => (
            <textarea
              {...a11y}
              rows={3}
              value={Array.isArray(value) ? value.map(asText).join('\n') : asText(value)}
              onInput={(e) => {
                const raw = e.currentTarget.value;
                set(raw === '' ? (optional ? undefined : []) : raw.split('\n'));
              }}
            />
          )}
        </FieldBox>
      );
    case 'object': {
      const obj = isObject(value) ? value : {};
      return (
        <fieldset class="group" id={id}>
          <legend>{spec.label}</legend>
          {spec.optional ? <p class="hint">Leave every field empty for none.</p> : null}
          <Messages id={`${id}-errors`} messages={messagesOf(ctx.errors, key)} />
          {spec.fields.map((f) => (
            <Control
              spec={f}
              path={[...path, f.key]}
              level={level}
              ctx={{
                ...ctx,
                // The object disappears when its last field is emptied (an optional link is absent, not empty).
                change: (p, v) => {
                  const next = setIn(obj, p.slice(path.length), v) as JsonObject;
                  const empty = Object.values(next).every((x) => x === '' || x === undefined);
                  ctx.change(path, empty && spec.optional ? undefined : next);
                },
              }}
            />
          ))}
        </fieldset>
      );
    }
    case 'list':
      return <ItemList spec={spec} path={path} ctx={ctx} level={level} />;
    case 'blocks':
      return (
        <div class="nested-blocks">
          <BlockList path={path} types={LEAF_TYPES} ctx={ctx} level={level} title={spec.label} />
        </div>
      );
  }
}

/** Move up, move down, remove: a block's or an item's buttons, named after what they act on. */
function MoveButtons({ id, name, index, count, min, onMove, onRemove }: { id: string; name: string; index: number; count: number; min: number; onMove: (to: number) => void; onRemove: () => void }) {
  return (
    <div class="move-buttons">
      <button type="button" class="secondary" id={`${id}-up`} disabled={index === 0} aria-label={`Move up: ${name}`} onClick={() => onMove(index - 1)}>
        Move up
      </button>
      <button type="button" class="secondary" id={`${id}-down`} disabled={index === count - 1} aria-label={`Move down: ${name}`} onClick={() => onMove(index + 1)}>
        Move down
      </button>
      <button type="button" class="secondary danger-text" id={`${id}-remove`} disabled={count <= min} aria-label={`Remove: ${name}`} onClick={onRemove}>
        Remove
      </button>
    </div>
  );
}

/** Where focus goes after a move: the same button, or its twin when it became disabled at an end. */
function moveFocus(id: string, to: number, count: number, up: boolean): string {
  if (up) return to === 0 ? `${id}-down` : `${id}-up`;
  return to === count - 1 ? `${id}-up` : `${id}-down`;
}

function move(list: Json[], from: number, to: number): { next: Json[]; map: (i: number) => number } {
  const next = [...list];
  const [item] = next.splice(from, 1);
  next.splice(to, 0, item);
  return { next, map: (i) => (i === from ? to : i === to ? from : i) };
}

function ItemList({ spec, path, ctx, level }: { spec: Extract<FieldSpec, { kind: 'list' }>; path: Path; ctx: Ctx; level: number }) {
  const raw = getIn(ctx.doc, path);
  const items = Array.isArray(raw) ? raw : [];
  const id = controlId(path);
  const key = pathKey(path);
  return (
    <fieldset class="group" id={id}>
      <legend>{spec.label}</legend>
      <Messages id={`${id}-errors`} messages={messagesOf(ctx.errors, key)} />
      <ol class="items">
        {items.map((_item, i) => {
          const itemPath = [...path, i];
          const itemId = controlId(itemPath);
          const name = `${spec.item} ${i + 1}`;
          return (
            <li class="item">
              <fieldset class="group" id={itemId}>
                <legend>{name}</legend>
                <Messages id={`${itemId}-errors`} messages={messagesOf(ctx.errors, pathKey(itemPath))} />
                {spec.fields.map((f) => (
                  <Control spec={f} path={[...itemPath, f.key]} ctx={ctx} level={level} />
                ))}
                <MoveButtons
                  id={itemId}
                  name={name}
                  index={i}
                  count={items.length}
                  min={spec.min}
                  onMove={(to) => {
                    const { next, map } = move(items, i, to);
                    ctx.restructure(path, next, map, `${name} moved to position ${to + 1}.`, moveFocus(controlId([...path, to]), to, items.length, to < i));
                  }}
                  onRemove={() => {
                    const next = items.filter((_, j) => j !== i);
                    const focus = next.length ? `${controlId([...path, Math.min(i, next.length - 1)])}-remove` : `${id}-add`;
                    ctx.restructure(path, next, (j) => (j === i ? null : j > i ? j - 1 : j), `${name} removed.`, focus);
                  }}
                />
              </fieldset>
            </li>
          );
        })}
      </ol>
      <button
        type="button"
        class="secondary"
        id={`${id}-add`}
        disabled={items.length >= spec.max}
        onClick={() => ctx.restructure(path, [...items, spec.make()], (i) => i, `${spec.item} ${items.length + 1} added.`, `${controlId([...path, items.length])}-remove`)}
      >
        Add {spec.item.toLowerCase()}
      </button>
    </fieldset>
  );
}

function blockName(type: BlockType | undefined, block: Json, index: number): string {
  const summary = type ? type.summary(block as JsonObject).replace(/\s+/g, ' ').trim() : '';
  const short = summary.length > 60 ? `${summary.slice(0, 57)}…` : summary;
  const label = type?.label ?? `Unknown block (${asText((block as JsonObject | null)?.type) || 'no type'})`;
  return `${index + 1}. ${label}${short ? `: ${short}` : ''}`;
}

/** The messages about a block that no field of its form shows (its type, a property the editor has no field for). */
function blockMessages(errors: Errors, key: string, type: BlockType | undefined): string[] {
  const fields = new Set(type?.fields.map((f) => f.key) ?? []);
  return Object.entries(errors)
    .filter(([k]) => k === key || (k.startsWith(`${key}.`) && !fields.has(k.slice(key.length + 1).split('.')[0])))
    .flatMap(([, v]) => v);
}

function BlockList({ path, types, ctx, level, title }: { path: Path; types: BlockType[]; ctx: Ctx; level: number; title: string }) {
  const raw = getIn(ctx.doc, path);
  const blocks = Array.isArray(raw) ? raw : [];
  const listId = controlId(path);
  const [adding, setAdding] = useState(types[0].type);
  const Heading = `h${Math.min(level, 6)}` as 'h3';
  const SubHeading = `h${Math.min(level + 1, 6)}` as 'h4';
  // The document's list is a region of the page; a column's list is a part of its column.
  const List = path.length === 1 ? 'section' : 'div';
  return (
    <List class="block-list" aria-labelledby={path.length === 1 ? `${listId}-title` : undefined}>
      <Heading id={`${listId}-title`}>{title}</Heading>
      <Messages id={`${listId}-errors`} messages={messagesOf(ctx.errors, pathKey(path))} />
      {blocks.length === 0 ? <p class="muted">No blocks yet.</p> : null}
      <ol class="blocks">
        {blocks.map((block, i) => {
          const blockPath = [...path, i];
          const key = pathKey(blockPath);
          const id = controlId(blockPath);
          const type = typeOf(block);
          const allowed = type && types.includes(type);
          const name = blockName(type, block, i);
          const problems = Object.keys(ctx.errors).some((k) => k === key || k.startsWith(`${key}.`));
          const open = ctx.open.has(key);
          return (
            <li class={`block${problems ? ' invalid' : ''}`} id={id} data-block-type={asText((block as JsonObject | null)?.type)}>
              <div class="block-head">
                <SubHeading id={`${id}-name`} class="block-name">
                  {name}
                  {problems ? <span class="block-problem"> (has problems)</span> : null}
                </SubHeading>
                <div class="block-buttons">
                  {allowed ? (
                    <button type="button" class="secondary" id={`${id}-edit`} aria-expanded={open ? 'true' : 'false'} aria-controls={`${id}-fields`} aria-label={`${open ? 'Close' : 'Edit'}: ${name}`} onClick={() => ctx.toggle(key)}>
                      {open ? 'Close' : 'Edit'}
                    </button>
                  ) : null}
                  <MoveButtons
                    id={id}
                    name={name}
                    index={i}
                    count={blocks.length}
                    min={0}
                    onMove={(to) => {
                      const { next, map } = move(blocks, i, to);
                      ctx.restructure(path, next, map, `${name.replace(/^\d+\. /, '')} moved to position ${to + 1}.`, moveFocus(controlId([...path, to]), to, blocks.length, to < i));
                    }}
                    onRemove={() => {
                      const next = blocks.filter((_, j) => j !== i);
                      const focus = next.length ? `${controlId([...path, Math.min(i, next.length - 1)])}-edit` : `${listId}-type`;
                      ctx.restructure(path, next, (j) => (j === i ? null : j > i ? j - 1 : j), `${name.replace(/^\d+\. /, '')} removed.`, focus);
                    }}
                  />
                </div>
              </div>
              <Messages id={`${id}-errors`} messages={blockMessages(ctx.errors, key, allowed ? type : undefined)} />
              {!allowed ? <p class="muted">The editor has no form for this block here: it is kept as it is.</p> : null}
              {allowed ? (
                <div class="block-fields" id={`${id}-fields`} hidden={!open}>
                  {open ? type.fields.map((f) => <Control spec={f} path={[...blockPath, f.key]} ctx={ctx} level={level + 2} />) : null}
                </div>
              ) : null}
            </li>
          );
        })}
      </ol>
      <div class="add-block">
        <label for={`${listId}-type`}>Block to add</label>
        <select id={`${listId}-type`} value={adding} onChange={(e) => setAdding(e.currentTarget.value)}>
          {types.map((t) => (
            <option value={t.type}>{t.label}</option>
          ))}
        </select>
        <button
          type="button"
          id={`${listId}-add`}
          onClick={() => {
            const type = types.find((t) => t.type === adding) ?? types[0];
            const at = blocks.length;
            // Focus goes to the new block's first field (or its Edit button when that is a group).
            const firstField = type.fields[0];
            const focus = ['list', 'object', 'blocks'].includes(firstField.kind) ? `${controlId([...path, at])}-edit` : controlId([...path, at, firstField.key]);
            ctx.restructure(path, [...blocks, type.make()], (i) => i, `${type.label} block added at position ${at + 1}.`, focus);
            ctx.toggle(pathKey([...path, at]), true);
          }}
        >
          Add block
        </button>
      </div>
    </List>
  );
}

function Settings({ ctx }: { ctx: Ctx }) {
  const messages = messagesOf(ctx.errors, 'settings');
  const problems = Object.keys(ctx.errors).some((k) => k.startsWith('settings'));
  return (
    <details class="settings" open={problems}>
      <summary>Document settings (width, colours, fonts)</summary>
      <Messages id="field-settings-errors" messages={messages} />
      <div class="settings-fields">
        {SETTINGS_FIELDS.map((f) => (
          <Control spec={f} path={['settings', f.key]} ctx={ctx} level={3} />
        ))}
      </div>
    </details>
  );
}

function BlockEditor({ initial, initialErrors, textarea, preview }: { initial: JsonObject; initialErrors: Errors; textarea: HTMLTextAreaElement; preview: LivePreview }) {
  const [doc, setDoc] = useState(initial);
  const [errors, setErrors] = useState(initialErrors);
  // Blocks with problems open first, so their messages show beside their fields.
  const [open, setOpen] = useState(() => new Set(Object.keys(initialErrors).map((k) => /^(blocks\.\d+(\.columns\.\d+\.blocks\.\d+)?)/.exec(k)?.[1]).filter((k): k is string => !!k)));
  const [said, setSaid] = useState('');
  const focusNext = useRef<string | null>(null);
  const first = useRef(true);

  useEffect(() => {
    if (first.current) {
      first.current = false;
      return;
    }
    textarea.value = JSON.stringify(doc, null, 2);
    preview.schedule();
  }, [doc]);

  useEffect(() => {
    if (!focusNext.current) return;
    document.getElementById(focusNext.current)?.focus();
    focusNext.current = null;
  });

  const ctx: Ctx = {
    doc,
    errors,
    open,
    change(path, value) {
      setDoc((d) => setIn(d, path, value) as JsonObject);
      const key = pathKey(path);
      if (errors[key]) setErrors(({ [key]: _gone, ...rest }) => rest);
    },
    restructure(listPath, next, map, say, focus) {
      setDoc((d) => setIn(d, listPath, next) as JsonObject);
      const key = pathKey(listPath);
      setErrors((e) => remapErrors(e, key, map));
      setOpen((o) => remapOpen(o, key, map));
      setSaid(say);
      focusNext.current = focus ?? null;
    },
    toggle(key, force) {
      setOpen((o) => {
        const next = new Set(o);
        if (force ?? !next.has(key)) next.add(key);
        else next.delete(key);
        return next;
      });
    },
  };

  const top = Object.entries(errors)
    .filter(([k]) => k === 'source' || k === 'version')
    .flatMap(([, v]) => v);
  return (
    <div class="block-editor-ui">
      <Messages id="block-editor-errors" messages={top} />
      <Settings ctx={ctx} />
      <BlockList path={['blocks']} types={BLOCK_TYPES} ctx={ctx} level={2} title="Blocks" />
      <p class="visually-hidden" role="status" aria-live="polite">
        {said}
      </p>
    </div>
  );
}

function mount(): void {
  const host = document.getElementById('block-editor');
  const textarea = document.querySelector<HTMLTextAreaElement>('textarea[name="source"]');
  if (!host || !textarea || !textarea.form) return;
  let doc: Json;
  try {
    doc = JSON.parse(textarea.value) as Json;
  } catch {
    doc = null;
  }
  if (!isObject(doc) || (doc.blocks !== undefined && !Array.isArray(doc.blocks))) {
    // Not a document the editor can show: the JSON stays editable as it is.
    host.innerHTML = '';
    const p = document.createElement('p');
    p.className = 'error';
    p.textContent = 'The block editor cannot open this source: it is not a block document. Correct the JSON below and save it.';
    host.append(p);
    return;
  }
  if (!Array.isArray(doc.blocks)) doc = { ...doc, blocks: [] };
  let errors: Errors = {};
  try {
    errors = JSON.parse(host.dataset.errors ?? '{}') as Errors;
  } catch {
    errors = {};
  }
  // The form posts the textarea; the editor is what a person sees.
  const field = textarea.closest<HTMLElement>('.field');
  if (field) field.hidden = true;
  host.innerHTML = '';
  render(<BlockEditor initial={doc} initialErrors={errors} textarea={textarea} preview={livePreview(textarea.form)} />, host);
}

mount();
