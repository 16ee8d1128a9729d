/*
 * files.h — file-system helpers every part shares: mkdir -p. One copy, so
 * that every caller reports a directory it could not make the same way.
 */
#ifndef GP_FILES_H
#define GP_FILES_H

/*
 * mkdir -p: creates path and every missing parent with mode (less the
 * umask). Returns 0 (also if path already exists), GP_ERANGE for a path
 * longer than PATH_MAX, or the system code (gp_syserr) of the first mkdir
 * that failed; the parents made before it stay.
 */
int gp_mkdirs(const char *path, unsigned mode);

#endif /* GP_FILES_H */
