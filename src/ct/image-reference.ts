// The grammar of distribution/reference, which the kubelet and the container runtimes parse an image with; the
// apiserver checks no more than that an image is there, so a bad one would fail only when each member pulls it.
// domain-name components separated by dots, or an IPv6 address in brackets, then an optional port
const domainPattern =
  /^(?:(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))*|\[[a-fA-F0-9:]+\])(?::[0-9]+)?$/;
const pathComponent = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;
const tagPattern = /^[\w][\w.-]{0,127}$/;
const digestLengths: Record<string, number> = { sha256: 64, sha384: 96, sha512: 128 };
const nameTotalLengthMax = 255;

const shape =
  'write [registry[:port]/]repository[:tag][@sha256:digest] with the repository in lowercase, such as ghcr.io/acme/devbox:1.4';

/**
 * Why `image` is not an image reference the kubelet can pull, as a sentence that says what to write instead, or
 * `undefined` when it is one. Pure.
 */
export function imageReferenceProblem(image: string): string | undefined {
  if (/^[a-f0-9]{64}$/.test(image)) return `is an image ID, not a reference; ${shape}`;
  const at = image.indexOf('@');
  const named = at === -1 ? image : image.slice(0, at);
  if (at !== -1) {
    const [algorithm = '', hex = '', ...rest] = image.slice(at + 1).split(':');
    const length = digestLengths[algorithm];
    if (rest.length > 0 || length === undefined || !new RegExp(`^[a-f0-9]{${length}}$`).test(hex))
      return `has no valid digest; write @sha256: and 64 lowercase hex digits, or leave the digest out`;
  }
  const lastSlash = named.lastIndexOf('/');
  const colon = named.indexOf(':', lastSlash + 1);
  const name = colon === -1 ? named : named.slice(0, colon);
  if (colon !== -1 && !tagPattern.test(named.slice(colon + 1)))
    return `has no valid tag; a tag is up to 128 letters, digits, _, . and -, not starting with . or -; ${shape}`;
  if (name.length > nameTotalLengthMax) return `has a name longer than ${nameTotalLengthMax} characters`;
  const [first = '', ...others] = name.split('/');
  // as the runtimes split it: a first part with a dot or a port, localhost, or capitals is the registry
  const isRegistry =
    others.length > 0 && (/[.:]/.test(first) || first === 'localhost' || first !== first.toLowerCase());
  if (isRegistry && !domainPattern.test(first)) return `has no valid registry host "${first}"; ${shape}`;
  if (isRegistry && !/[.:]/.test(first) && first !== 'localhost')
    return `starts with "${first}", which the container runtimes would take for a registry host because of its capitals; write the repository in lowercase (${name.toLowerCase()}), or give the registry with its domain or port`;
  const repository = isRegistry ? others : [first, ...others];
  if (!repository.every((part) => pathComponent.test(part.toLowerCase())))
    return `is not an image reference; ${shape}`;
  const written = repository.join('/');
  if (written !== written.toLowerCase())
    return `has the repository "${written}" in capitals; write it in lowercase (${written.toLowerCase()})`;
  return undefined;
}
