/**
 * A loop's nap that another loop can cut short. A ring while the loop is busy is kept, so
 * the next nap returns at once: news that arrives between "nothing to do" and the nap (a
 * chunk of audience committed just then) is never lost for a whole poll interval.
 */
export class Alarm {
  private pending = false;
  private fire?: () => void;

  ring(): void {
    const fire = this.fire;
    this.fire = undefined;
    if (fire) fire();
    else this.pending = true;
  }

  nap(ms: number): Promise<void> {
    if (this.pending) {
      this.pending = false;
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        this.fire = undefined;
        resolve();
      }, ms);
      this.fire = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }
}
