// Lists, contacts and segments (src/dashboard/pages/segments.tsx, list-import.tsx): the segment
// builder offers each field's operators only and shows the live count of the rules as they stand
// (GET /app/segments/count, the API's checks); the mapping step's import shows its progress.
// Without this script the forms work as they are: the server checks every rule and counts once saved.

const segmentForm = document.getElementById('segment-form');
if (segmentForm) {
  const countBox = document.getElementById('segment-count');

  /** The operators of a rule's field type only (the server refuses the others anyway). */
  const fitOperators = (rule) => {
    const field = rule.querySelector('[data-rule-field]');
    const operator = rule.querySelector('[data-rule-operator]');
    if (!field || !operator) return;
    const types = JSON.parse(field.dataset.types || '{}');
    const type = types[field.value];
    let firstFit;
    for (const option of operator.options) {
      const fits = !type || option.dataset.types.split(' ').includes(type);
      option.hidden = !fits;
      option.disabled = !fits;
      if (fits && !firstFit) firstFit = option;
    }
    if (operator.selectedOptions[0]?.disabled && firstFit) operator.value = firstFit.value;
  };

  let timer;
  let asked = 0;
  const count = async () => {
    const mine = ++asked;
    const params = new URLSearchParams();
    for (const [key, value] of new FormData(segmentForm)) if (key !== '_csrf' && key !== 'more' && typeof value === 'string') params.append(key, value);
    try {
      const res = await fetch(`${countBox.dataset.countUrl}?${params}`, { headers: { Accept: 'application/json' } });
      const body = await res.json();
      if (mine !== asked) return;
      if (res.ok && body.status === 'success') {
        const n = body.message.count;
        countBox.textContent = `${n.toLocaleString('en-US')} contact${n === 1 ? '' : 's'} match these rules.`;
        countBox.dataset.count = String(n);
      } else {
        countBox.textContent = `Not counted yet: ${(body.lines ?? ['the rules are not complete.'])[0]}`;
        delete countBox.dataset.count;
      }
    } catch {
      if (mine === asked) countBox.textContent = 'The count could not be fetched; it shows once the segment is saved.';
    }
  };
  const later = () => {
    clearTimeout(timer);
    timer = setTimeout(count, 300);
  };

  for (const rule of segmentForm.querySelectorAll('[data-rule]')) fitOperators(rule);
  segmentForm.addEventListener('change', (event) => {
    const rule = event.target.closest('[data-rule]');
    if (rule && event.target.matches('[data-rule-field]')) fitOperators(rule);
    later();
  });
  // Counted once something changes: until then the page's own sentence (the saved count) stands.
  segmentForm.addEventListener('input', later);
}

/** The mapping step's import: the page waits for the import's answer; meanwhile its rows are followed. */
const mapForm = document.getElementById('map-form');
if (mapForm) {
  mapForm.addEventListener('submit', () => {
    const box = document.getElementById('map-progress-box');
    const bar = document.getElementById('map-progress');
    const status = document.getElementById('map-status');
    box.hidden = false;
    status.textContent = 'Importing…';
    const poll = async () => {
      try {
        const res = await fetch('/app/contacts/imports.json', { headers: { Accept: 'application/json' } });
        if (res.ok) {
          const { imports } = await res.json();
          const mine = imports.find((r) => r.status === 'running' && r.file_name === mapForm.dataset.fileName);
          if (mine) {
            bar.value = mine.file_bytes > 0 ? Math.min(99, Math.floor((mine.bytes_read / mine.file_bytes) * 100)) : 0;
            status.textContent = `${mine.rows_read.toLocaleString('en-US')} rows read…`;
          }
        }
      } catch {
        // The next poll tries again; the page that follows the import ends it.
      }
      setTimeout(poll, 500);
    };
    setTimeout(poll, 300);
  });
}
