/**
 * `instanceof` that survives duplicate module copies. Next.js evaluates instrumentation
 * and each route bundle as separate copies of the same modules (only globalThis is
 * shared), so an error thrown by the worker's copy of a class is not `instanceof` the
 * route's copy: a 403 became a 500. Classes mark their instances with a registry symbol
 * (Symbol.for is process-wide) and match on that mark instead of on identity.
 */
export function brandOf(name: string): symbol {
  return Symbol.for(`a2.${name}`)
}

export function mark(instance: object, brand: symbol): void {
  Object.defineProperty(instance, brand, { value: true, enumerable: false })
}

/**
 * Marks an instance with the brand of its class and of every branded class above it, so
 * `instanceof` a base class holds for its subclasses too. Call from the base constructor
 * with `new.target`.
 */
export function markClassChain(instance: object, newTarget: unknown): void {
  for (let c = newTarget as { brand?: symbol } | null; c && c.brand; c = Object.getPrototypeOf(c)) mark(instance, c.brand)
}

export function hasBrand(value: unknown, brand: symbol): boolean {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[brand] === true
}

/**
 * The base of the library's error classes: each declares `static readonly brand =
 * brandOf(name)`, and `instanceof` matches on the brand, which every instance carries for
 * each branded class of its chain (so `x instanceof A2Error` holds for its subclasses too).
 */
export class BrandedError extends Error {
  static readonly brand?: symbol
  static [Symbol.hasInstance](value: unknown): boolean {
    const brand = (this as { brand?: symbol }).brand
    return brand !== undefined && hasBrand(value, brand)
  }

  constructor(message: string, options: { cause?: unknown } = {}) {
    super(message, options)
    markClassChain(this, new.target)
  }
}
