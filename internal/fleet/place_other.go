//go:build !unix

package fleet

// folderID is "" here: the folder is named by its path alone.
func folderID(string) string { return "" }
