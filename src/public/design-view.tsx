import type { Express } from 'express';
import { isUtr } from '../http/fields';
import type { Deps } from '../context';
import { pageErrors, sendRecipientMessage } from '../dashboard/recipient';
import { joinTemplate, TEMPLATE_HTML } from '../sources/template-html';

/**
 * GET /design/<automation email utr> (`design_url`): the email's HTML as designed, served
 * with `Content-Security-Policy: sandbox` so its markup can never run script on our origin.
 */
export function mountDesignView(app: Express, deps: Deps): void {
  app.get(
    '/design/:utr',
    pageErrors(async (req, res) => {
      const utr = String(req.params.utr);
      const row = isUtr(utr)
        ? await joinTemplate(deps.db('automation_schedules as s'), 's')
            .join('automations as a', (j) => j.on('a.id', 's.automation_id').andOn('a.user_id', 's.user_id'))
            .where('s.utr', utr.toLowerCase())
            .whereNull('s.deleted_at')
            .whereNull('a.deleted_at')
            .first('s.template_html', deps.db.raw(TEMPLATE_HTML))
        : undefined;
      if (!row) {
        sendRecipientMessage(res, 404, 'Design not found', 'This design does not exist or was removed.');
        return;
      }
      res
        .status(200)
        .set({
          'Content-Type': 'text/html; charset=utf-8',
          'Content-Security-Policy': 'sandbox',
          'X-Content-Type-Options': 'nosniff',
          'Cache-Control': 'no-store',
        })
        .send(row.template_html ?? row.html_code);
    }),
  );
}
