import type { DashboardKit } from '../respond';

/** The account's designs: the library and the three editors (src/dashboard/index.tsx mounts each area). */
export function mountDesignPages(_kit: DashboardKit): void {}
