// Herald's dashboard in the browser: tells the server the browser's time zone, draws the charts
// (Chart.js, served beside this file) from the data the page carries, and follows a CSV
// upload's progress. Loaded as a module from the page's own origin; no inline script anywhere.

const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
if (zone) {
  const secure = location.protocol === 'https:' ? '; Secure' : '';
  document.cookie = `herald_tz=${encodeURIComponent(zone)}; Path=/app; Max-Age=31536000; SameSite=Strict${secure}`;
}

const csrf = document.querySelector('meta[name="csrf-token"]')?.getAttribute('content') ?? '';

/** The page's colours (CSS custom properties), so charts follow light and dark. */
function colours() {
  const style = getComputedStyle(document.documentElement);
  const get = (name) => style.getPropertyValue(name).trim();
  return { series: (n) => get(`--series-${n}`), text: get('--muted'), grid: get('--grid') };
}

function chartConfig(spec) {
  const c = colours();
  const percent = Boolean(spec.percent);
  return {
    type: spec.kind,
    data: {
      labels: spec.labels,
      datasets: spec.series.map((s) => ({
        label: s.label,
        data: s.data,
        type: s.reference ? 'line' : spec.kind,
        borderColor: c.series(s.color),
        backgroundColor: c.series(s.color),
        borderWidth: 2,
        borderDash: s.reference ? [6, 4] : [],
        pointRadius: s.reference ? 0 : 2,
        spanGaps: true,
      })),
    },
    options: {
      responsive: true,
      maintainAspectRatio: false,
      animation: false,
      interaction: { mode: 'index', intersect: false },
      scales: {
        x: { ticks: { color: c.text, maxRotation: 0, autoSkip: true }, grid: { color: c.grid } },
        y: {
          beginAtZero: true,
          ticks: { color: c.text, precision: percent ? undefined : 0, callback: percent ? (v) => `${v} %` : undefined },
          grid: { color: c.grid },
        },
      },
      plugins: {
        legend: { labels: { color: c.text } },
        tooltip: percent ? { callbacks: { label: (ctx) => `${ctx.dataset.label}: ${ctx.parsed.y} %` } } : {},
      },
    },
  };
}

function drawCharts() {
  if (!window.Chart) return;
  for (const canvas of document.querySelectorAll('canvas[data-chart]')) {
    window.Chart.getChart(canvas)?.destroy();
    new window.Chart(canvas, chartConfig(JSON.parse(canvas.dataset.chart)));
  }
}

drawCharts();
window.matchMedia('(prefers-color-scheme: dark)').addEventListener('change', drawCharts);

/** The contacts page's CSV upload: upload, then follow the import's rows until its result. */
function followImport(form) {
  const box = document.getElementById('import-progress-box');
  const bar = document.getElementById('import-progress');
  const status = document.getElementById('import-status');
  const button = form.querySelector('button[type="submit"]');
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const file = form.querySelector('input[type="file"]').files[0];
    if (!file) return;
    const after = Number(form.dataset.lastImport || 0);
    box.hidden = false;
    bar.value = 0;
    status.classList.remove('error');
    status.textContent = 'Uploading…';
    button.disabled = true;
    let done = false;

    const show = (record) => {
      if (done || record.status !== 'running') return;
      const share = record.file_bytes > 0 ? (record.bytes_read / record.file_bytes) * 100 : 0;
      bar.value = Math.min(99, Math.floor(share));
      status.textContent = `${record.rows_read.toLocaleString('en-US')} rows read…`;
    };
    const poll = async () => {
      if (done) return;
      try {
        const res = await fetch('/app/contacts/imports.json', { headers: { Accept: 'application/json' } });
        if (res.ok) {
          const { imports } = await res.json();
          const mine = imports.find((r) => r.id > after && file.name.startsWith(r.file_name));
          if (mine) show(mine);
        }
      } catch {
        // The next poll tries again; the upload's own answer ends it.
      }
      if (!done) setTimeout(poll, 400);
    };

    const xhr = new XMLHttpRequest();
    xhr.open('POST', form.action);
    xhr.setRequestHeader('Accept', 'application/json');
    xhr.setRequestHeader('X-CSRF-Token', csrf);
    xhr.upload.addEventListener('progress', (e) => {
      if (e.lengthComputable && !done) status.textContent = `Uploading… ${Math.round((e.loaded / e.total) * 100)} %`;
    });
    const finish = (text, failed) => {
      done = true;
      button.disabled = false;
      status.textContent = text;
      if (failed) status.classList.add('error');
    };
    xhr.addEventListener('load', () => {
      let body = {};
      try {
        body = JSON.parse(xhr.responseText);
      } catch {
        body = {};
      }
      if (xhr.status === 200 && body.status === 'success') {
        bar.value = 100;
        form.dataset.lastImport = String(body.message.id);
        finish(`Imported: ${body.message.result}.`, false);
      } else {
        finish(`Not imported: ${(body.errors ?? [`the server answered ${xhr.status}`]).join(' ')}`, true);
      }
    });
    xhr.addEventListener('error', () => finish('Not imported: the upload did not reach the server.', true));
    xhr.send(new FormData(form));
    poll();
  });
}

const importForm = document.getElementById('import-form');
if (importForm) followImport(importForm);
