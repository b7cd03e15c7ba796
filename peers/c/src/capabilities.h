/* The `capabilities` event: both stacks in both roles, with the libraries, settings and
 * deviations of docs/stacks.md "Peers in other languages". */
#ifndef RPCARENA_CAPABILITIES_H
#define RPCARENA_CAPABILITIES_H

#include <stddef.h>

/* The event line (malloc'd). exe is the absolute path of the running executable. */
char *capabilities_event(const char *exe, unsigned cpus);

/* "name=version;..." of the build, for a stack's libraries. */
const char *lib_version(const char *name);

#endif
