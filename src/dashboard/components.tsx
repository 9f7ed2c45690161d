import type { ComponentChildren } from 'preact';

/** Pieces the pages share: numbers with their labels, tables that fold on a phone, charts. */

export function Metric({ name, label, value, note, level }: { name: string; label: string; value: string; note?: string; level?: 'ok' | 'warning' | 'over' }) {
  return (
    <div class={`metric${level && level !== 'ok' ? ` ${level}` : ''}`}>
      <dt>{label}</dt>
      <dd data-metric={name}>{value}</dd>
      {note ? <dd class="note">{note}</dd> : null}
    </div>
  );
}

export const Metrics = ({ children, label }: { children: ComponentChildren; label: string }) => (
  <dl class="metrics" aria-label={label}>
    {children}
  </dl>
);

export interface Column<R> {
  label: string;
  numeric?: boolean;
  cell: (row: R) => ComponentChildren;
}

/**
 * A table whose rows become labelled blocks on a narrow screen (each cell carries its column's
 * label), so no page scrolls sideways on a phone. Its values wrap anywhere; should its columns
 * still not fit a wider window, the table scrolls inside its own box (a labelled region that
 * takes the keyboard's focus, so it scrolls without a mouse too), never the page.
 */
export function Table<R>({ caption, columns, rows, empty, name }: { caption: string; columns: Column<R>[]; rows: R[]; empty: string; name: string }) {
  if (rows.length === 0) return <p class="muted">{empty}</p>;
  return (
    <div class="table-box" role="region" aria-labelledby={`table-${name}`} tabIndex={0}>
      <table class="data" data-table={name}>
        <caption id={`table-${name}`}>{caption}</caption>
        <thead>
          <tr>
            {columns.map((c) => (
              <th scope="col" class={c.numeric ? 'num' : undefined}>
                {c.label}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr>
              {columns.map((c) => (
                <td data-label={c.label} class={c.numeric ? 'num' : undefined}>
                  {c.cell(r)}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

export interface Series {
  label: string;
  data: Array<number | null>;
  /** Which of the palette's colours (CSS --series-N). */
  color: 1 | 2 | 3 | 4 | 5;
  /** A reference line (a limit), drawn dashed without points. */
  reference?: boolean;
}

export interface ChartSpec {
  kind: 'line' | 'bar';
  labels: string[];
  series: Series[];
  /** Values are percentages (axis and tooltips say %). */
  percent?: boolean;
}

/**
 * A chart drawn by Chart.js in the browser (assets/dashboard/app.js) from the data in its
 * attribute; the figure's caption and the canvas's label say what it shows.
 */
export function Chart({ id, title, description, spec }: { id: string; title: string; description: string; spec: ChartSpec }) {
  return (
    <figure class="chart">
      <figcaption id={`${id}-title`}>{title}</figcaption>
      <div class="chart-box">
        <canvas id={id} role="img" aria-label={`${title}: ${description}`} data-chart={JSON.stringify(spec)} />
      </div>
    </figure>
  );
}

export const Section = ({ title, id, children }: { title: string; id?: string; children: ComponentChildren }) => (
  <section class="card" aria-labelledby={id ? `${id}-h` : undefined} id={id}>
    <h2 id={id ? `${id}-h` : undefined}>{title}</h2>
    {children}
  </section>
);
