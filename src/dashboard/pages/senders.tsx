import type { DashboardKit } from '../respond';

/** Senders and unsubscribe groups (src/dashboard/index.tsx mounts each area). */
export function mountSenderPages(_kit: DashboardKit): void {}
