/**
 * Theme: 'light' | 'dark' stored in localStorage under THEME_KEY; absent means "follow the
 * system". The script runs in <head> before first paint, so there is no flash of the wrong theme.
 * (Not a client module: the layout, a server component, inlines the string.)
 */
export const THEME_KEY = 'a2-theme'

export const THEME_SCRIPT = `(function(){try{var t=localStorage.getItem(${JSON.stringify(THEME_KEY)});var d=t==='dark'||(t!=='light'&&window.matchMedia('(prefers-color-scheme: dark)').matches);document.documentElement.classList.toggle('dark',d);}catch(e){}})();`
