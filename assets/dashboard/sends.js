// The send editor's live audience count: when the recipients, the exclusions or the unsubscribe
// group change, asks GET /app/sends/audience-count (the count the send would reach, as the fan-out
// writes it) and shows the answer in the form's <output>. Without this script the count shows
// once the send is saved.

const form = document.querySelector('form.send-form');
const output = document.getElementById('audience-count');

if (form && output) {
  const include = form.querySelector('[data-audience="include"]');
  const exclude = form.querySelector('[data-audience="exclude"]');
  const group = form.querySelector('[data-audience="group"]');
  let timer;
  let asked = 0;

  const chosen = (select) => (select ? [...select.selectedOptions].map((o) => o.value) : []);

  async function recount() {
    const params = new URLSearchParams();
    for (const v of chosen(include)) params.append('recipient_id[]', v);
    for (const v of chosen(exclude)) params.append('exclude_specific_recipient_id[]', v);
    if (group && group.value) params.set('unsubscribe_group_id', group.value);
    if (!params.has('recipient_id[]')) {
      output.textContent = 'choose lists or segments to send to.';
      return;
    }
    const mine = ++asked;
    output.textContent = 'counting…';
    try {
      const res = await fetch(`/app/sends/audience-count?${params}`, { headers: { Accept: 'application/json' }, credentials: 'same-origin' });
      if (mine !== asked) return;
      if (!res.ok) {
        output.textContent = 'could not be counted just now.';
        return;
      }
      const body = await res.json();
      output.textContent = body.text;
    } catch {
      if (mine === asked) output.textContent = 'could not be counted just now.';
    }
  }

  const later = () => {
    clearTimeout(timer);
    timer = setTimeout(recount, 250);
  };
  for (const el of [include, exclude, group]) el?.addEventListener('change', later);
}
