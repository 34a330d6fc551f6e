/* fuzz_catalogue.c - the model catalogue reader (src/model/catalogue.c, data/models.csv). */
#include "drover/model.h"
#include "fuzz.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = 0;
    drv_catalogue cat = {0};
    drv_diag d;
    if (drv_catalogue_parse(&cat, "fuzz.csv", text, &d) == 0)
        drv_catalogue_fini(&cat);
    free(text);
    return 0;
}
