package fsregistry

// ReplaceInvalidUTF8 lets the external fuzz test build its reference.
var ReplaceInvalidUTF8 = replaceInvalidUTF8
