/*
 * enum-names.c — prints the names of one of the lists that the daemon's API
 * speaks, one a line, for test-names.sh to hold their copies in the console
 * and the CLI to: "states" a workload's states (GP_WL_STATES), "on-preempt"
 * the eviction modes (GP_ON_PREEMPT_MODES), "kinds" the kinds (GP_KINDS),
 * "usage-by" what usage is counted by (GPD__USAGE_KINDS), "outcomes" how an
 * attempt ends (GPD__OUTCOMES), "events" the kinds of events (GPD__EVENTS).
 */
#include <stdio.h>
#include <string.h>

#include "daemon/auth.h"
#include "daemon/daemon.h"
#include "daemon/usage.h"
#include "engine/gp_engine.h"

int main(int argc, char **argv) {
    static const char *const states[] = {GP_WL_STATES(GP_ENUM_NAME_OF) NULL};
    static const char *const modes[] = {GP_ON_PREEMPT_MODES(GP_ENUM_NAME_OF) NULL};
    static const char *const kinds[] = {GP_KINDS(GP_ENUM_NAME_OF) NULL};
    static const char *const usage[] = {GPD__USAGE_KINDS(GP_ENUM_NAME_OF) NULL};
    /* The roles a token may be given: all but the first, none. */
    static const char *const roles[] = {GPD__ROLES(GP_ENUM_NAME_OF) NULL};
    static const char *const outcomes[] = {GPD__OUTCOMES(GP_ENUM_NAME_OF) NULL};
#define EVENT_NAME(sym, name, doc) name,
    static const char *const events[] = {GPD__EVENTS(EVENT_NAME) NULL};
    const char *const *names = NULL;
    if (argc == 2 && strcmp(argv[1], "states") == 0)
        names = states;
    else if (argc == 2 && strcmp(argv[1], "on-preempt") == 0)
        names = modes;
    else if (argc == 2 && strcmp(argv[1], "kinds") == 0)
        names = kinds;
    else if (argc == 2 && strcmp(argv[1], "usage-by") == 0)
        names = usage;
    else if (argc == 2 && strcmp(argv[1], "roles") == 0)
        names = roles + 1;
    else if (argc == 2 && strcmp(argv[1], "outcomes") == 0)
        names = outcomes;
    else if (argc == 2 && strcmp(argv[1], "events") == 0)
        names = events;
    if (names == NULL) {
        fprintf(stderr,
                "usage: enum-names states|on-preempt|kinds|usage-by|roles|outcomes|events\n");
        return 2;
    }
    for (int i = 0; names[i] != NULL; i++)
        printf("%s\n", names[i]);
    return 0;
}
