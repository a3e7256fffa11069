// Package dirents lists a folder's entry names with getdents64 itself,
// for the readers that list large folders on every run (a registry of
// thousands of records, /proc): no *os.File, no fs.DirEntry and no string
// is made for a name its caller drops, and the caller may stop early.
//
// It is for Linux; elsewhere the package is empty.
package dirents
