package qwenregistry

// oNoFollow is 0 on Windows, which has no O_NOFOLLOW: readRegular's Lstat
// has already refused a symlink, and a link swapped in between would be
// followed (as os.OpenFile does on Windows).
const oNoFollow = 0
