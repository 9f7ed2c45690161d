import type { DashboardKit } from '../respond';
import { page } from '../respond';
import { keptReportPage, pickWinnerAction, sendReportPage } from './send';

/** Single sends: the list, the editor, and each send's report (src/dashboard/index.tsx mounts each area). */
export function mountSendPages({ router: r, signedIn, requireCsrf, form }: DashboardKit): void {
  r.get('/sends/:utr', signedIn, page(sendReportPage, 'sends'));
  r.get('/sends/:utr/reports/:eventId', signedIn, page(keptReportPage, 'sends'));
  r.post('/sends/:utr/ab/winner', form, signedIn, requireCsrf, page(pickWinnerAction, 'sends'));
}
