/*
 * submit-fields.c — prints what GP_SUBMIT_FIELDS (common/gp_submit.h) says
 * of a submission, for test-submit-fields.sh to hold its copies to: "table"
 * the field table of docs/api.md, "names" the JSON names, "flags" the flags
 * of `gpupool submit`, one a line.
 */
#include <stdio.h>
#include <string.h>

#include "common/gp_submit.h"

int main(int argc, char **argv) {
    const char *what = argc > 1 ? argv[1] : "table";
    if (strcmp(what, "table") == 0) {
        gp_fields_doc_table(stdout, gp_submit_fields, GP_SUBMIT_NFIELDS, "submit", "(required)");
        return 0;
    }
    int names = strcmp(what, "names") == 0;
    if (!names && strcmp(what, "flags") != 0) {
        fprintf(stderr, "usage: submit-fields [table|names|flags]\n");
        return 2;
    }
    for (int i = 0; i < GP_SUBMIT_NFIELDS; i++) {
        const gp_field *f = &gp_submit_fields[i];
        if (names || f->flag != NULL)
            printf("%s\n", names ? f->name : f->flag);
    }
    return 0;
}
