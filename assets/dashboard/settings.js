// The sender form's place pickers (src/dashboard/pages/sender-form.tsx): choosing a country
// offers its states, choosing a state its cities, as selects filled from the dashboard's JSON
// (GET /app/senders/places.json). Without this script the page still works: a state or city
// whose choices the page does not know yet is typed as its id.

const form = document.querySelector('form[data-places]');

/** Replaces a place's control (a number field or a select) with a select of `items`, keeping its id, name and described-by. */
function toSelect(control, items, noneLabel) {
  const select = document.createElement('select');
  for (const attr of ['id', 'name', 'aria-describedby', 'aria-invalid', 'data-place']) {
    const value = control.getAttribute(attr);
    if (value !== null) select.setAttribute(attr, value);
  }
  const none = document.createElement('option');
  none.value = '';
  none.textContent = noneLabel;
  select.append(none);
  for (const item of items) {
    const option = document.createElement('option');
    option.value = String(item.id);
    option.textContent = item.name;
    select.append(option);
  }
  control.replaceWith(select);
  // The hint that says "type the id" no longer applies to a select.
  const hint = document.getElementById(`${select.id}-hint`);
  if (hint) hint.hidden = true;
  return select;
}

async function load(query) {
  const res = await fetch(`${form.dataset.places}?${query}`, { headers: { Accept: 'application/json' }, credentials: 'same-origin' });
  if (!res.ok) throw new Error(`places answered ${res.status}`);
  return res.json();
}

const control = (place) => form.querySelector(`[data-place="${place}"]`);

/** Shows the status of a load beside the form's place fields (a polite live region). */
function say(text) {
  let status = form.querySelector('.places-status');
  if (!status) {
    status = document.createElement('p');
    status.className = 'places-status muted';
    status.setAttribute('role', 'status');
    control('city').closest('.field').after(status);
  }
  status.textContent = text;
}

async function countryChosen(countryId) {
  toSelect(control('city'), [], 'Choose a state first');
  if (!countryId) {
    wireState(toSelect(control('state'), [], 'Choose a country first'));
    return;
  }
  say('Loading the states…');
  try {
    const { states } = await load(`country_id=${encodeURIComponent(countryId)}`);
    wireState(toSelect(control('state'), states, states.length ? 'None' : 'This country has no states'));
    say('');
  } catch {
    say('The states could not be loaded: type the state’s id, or try again.');
  }
}

async function stateChosen(stateId) {
  if (!stateId) {
    toSelect(control('city'), [], 'Choose a state first');
    return;
  }
  say('Loading the cities…');
  try {
    const { cities } = await load(`state_id=${encodeURIComponent(stateId)}`);
    toSelect(control('city'), cities, cities.length ? 'None' : 'This state has no cities');
    say('');
  } catch {
    say('The cities could not be loaded: type the city’s id, or try again.');
  }
}

function wireState(select) {
  if (select.tagName === 'SELECT') select.addEventListener('change', () => void stateChosen(select.value));
}

if (form) {
  const country = control('country');
  country.addEventListener('change', () => void countryChosen(country.value));
  wireState(control('state'));
  // A country chosen without a state list yet (a typed state id): offer its states now,
  // unless a state id was typed, which stays as typed.
  if (country.value && control('state').tagName !== 'SELECT' && !control('state').value) void countryChosen(country.value);
}
