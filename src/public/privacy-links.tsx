import { PostForm, PrimaryButton, Text } from '../dashboard/recipient';

/**
 * The preferences page's "Your data" block (src/public/unsubscribe.tsx): "Get my data" (a POST:
 * it mails a one-time link) and "Forget me" (a confirmation page first). Handlers: my-data.tsx.
 */
export function PrivacyLinks({ token }: { token: string }) {
  return (
    <section aria-labelledby="my-data-h">
      <h2 id="my-data-h">Your data</h2>
      <PostForm action={`/unsubscribe/${token}/my-data`}>
        <Text>Get a copy of everything this sender holds about your address: we mail you a link to download it.</Text>
        <PrimaryButton>Get my data</PrimaryButton>
      </PostForm>
      <Text>
        <a href={`/unsubscribe/${token}/forget`}>Forget me</a> — erase your address and everything about it from this sender’s lists.
      </Text>
    </section>
  );
}
