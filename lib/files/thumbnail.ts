/**
 * An image's thumbnail: what a chat shows of it, so opening a chat of 20 photos sends a few KB
 * each, not the originals (bench/README.md has the bytes). WebP, at most 320 px a side (twice
 * the 160 px the page draws it at, for 2× screens), the first frame of an animation.
 */
import { isImage } from './sniff'

const SIDE = 320
/** 40 megapixels: past it an image is not decoded here (a decompression bomb costs what its pixels do). */
const MAX_INPUT_PIXELS = 40_000_000

/** The thumbnail of `bytes` (of sniffed type `mediaType`), or undefined for a file that is no image or an image that does not decode. */
export async function thumbnailOf(bytes: Uint8Array, mediaType: string): Promise<Uint8Array | undefined> {
  if (!isImage(mediaType)) return undefined
  try {
    // Loaded on the first image: most processes never make one. A platform sharp has no build
    // for fails here, and its images go without thumbnails (the page shows the originals).
    const { default: sharp } = await import('sharp')
    const out = await sharp(bytes, { limitInputPixels: MAX_INPUT_PIXELS, animated: false })
      .rotate() // as the camera held it (EXIF orientation)
      .resize(SIDE, SIDE, { fit: 'inside', withoutEnlargement: true })
      .webp({ quality: 70 })
      .toBuffer()
    return new Uint8Array(out)
  } catch {
    // Or a file whose magic bytes say image but whose body does not decode: kept, served as uploaded.
    return undefined
  }
}
