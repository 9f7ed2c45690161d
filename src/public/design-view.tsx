import type { Express } from 'express';
import { isUtr } from '../http/fields';
import type { Deps } from '../context';
import { sendEmailDocument } from '../dashboard/preview-frame';
import { pageErrors, sendRecipientMessage } from '../dashboard/recipient';
import { joinTemplate, TEMPLATE_HTML } from '../sources/template-html';

/**
 * GET /design/<automation email utr> (`design_url`): the email's HTML as designed, served
 * under the email previews' policy (src/dashboard/preview-frame.ts: sandboxed, so its markup
 * can never run script on our origin; its own inline styles allowed by hash, nothing else).
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
      sendEmailDocument(res, row.template_html ?? row.html_code);
    }),
  );
}
