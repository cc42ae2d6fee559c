/** Where a request came from: forwarded headers count only behind a trusted proxy; IPv6 counts by /64. */
import { afterEach, describe, expect, it } from 'vitest'
import { resetEnvForTests } from '@/lib/env'
import { addressKey, clientAddress, isHttps, PEER_HEADER } from './request-facts'

const request = (headers: Record<string, string>, url = 'http://app.example/api/sessions') => new Request(url, { headers })

describe('the client address', () => {
  afterEach(() => {
    delete process.env.A2_TRUST_PROXY
    resetEnvForTests()
  })

  it('is the socket address stamped at boot; a client-sent X-Forwarded-For is ignored without a trusted proxy', () => {
    resetEnvForTests()
    expect(clientAddress(request({ [PEER_HEADER]: '203.0.113.9', 'x-forwarded-for': '10.0.0.1' }))).toBe('203.0.113.9')
    expect(clientAddress(request({ 'x-forwarded-for': '10.0.0.1' }))).toBe('unknown')
    expect(isHttps(request({ 'x-forwarded-proto': 'https' }))).toBe(false)
  })

  it('behind a trusted proxy is the last X-Forwarded-For entry (the one the proxy appended)', () => {
    process.env.A2_TRUST_PROXY = '1'
    resetEnvForTests()
    expect(clientAddress(request({ [PEER_HEADER]: '10.1.1.1', 'x-forwarded-for': '6.6.6.6, 198.51.100.4' }))).toBe('198.51.100.4')
    expect(isHttps(request({ 'x-forwarded-proto': 'https' }))).toBe(true)
  })

  it('counts IPv6 by its /64 and IPv4-mapped addresses as IPv4', () => {
    expect(addressKey('2001:db8:1:2:aaaa::1')).toBe('2001:db8:1:2::/64')
    expect(addressKey('2001:db8:1:2:bbbb:cccc:dddd:eeee')).toBe('2001:db8:1:2::/64')
    expect(addressKey('::ffff:192.0.2.1')).toBe('192.0.2.1')
    expect(addressKey('not an address')).toBe('unknown')
  })
})
