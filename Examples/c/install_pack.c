/*
 * install_pack: installs one asset pack from a Backlot repository and writes one of its files to
 * standard output, the smallest complete use of libbacklot from C.
 *
 *   cc install_pack.c $(pkg-config --cflags --libs backlot) -o install_pack
 *   ./install_pack CATALOG_URL ROOT_PUB CA_PEM|- CONTAINER PACK FILE > out
 *
 * Progress goes to standard error. Exit status: 0 when the file was written, 1 when libbacklot
 * refused or failed (its message on standard error), 2 for bad arguments.
 */
#include <backlot/backlot.h>

#include <stdio.h>
#include <string.h>

static void show_progress(void *context, uint64_t completed, uint64_t total) {
    const char *pack = context;
    if (total > 0)
        fprintf(stderr, "%s: %llu of %llu bytes\n", pack, (unsigned long long)completed, (unsigned long long)total);
}

int main(int argc, char **argv) {
    if (argc != 7) {
        fprintf(stderr, "usage: install_pack CATALOG_URL ROOT_PUB CA_PEM|- CONTAINER PACK FILE\n");
        return 2;
    }
    backlot_config config;
    backlot_config_init(&config);
    config.catalog_url = argv[1];
    config.trusted_key_path = argv[2];
    config.ca_path = strcmp(argv[3], "-") == 0 ? NULL : argv[3];
    config.container_path = argv[4];

    backlot_manager *manager = NULL;
    backlot_status status = backlot_manager_open(&config, &manager);
    if (status != BACKLOT_OK) {
        fprintf(stderr, "install_pack: %s: %s\n", backlot_status_name(status), backlot_last_error_message());
        return 1;
    }
    int exit_status = 1;
    status = backlot_ensure_local_availability(manager, argv[5], show_progress, argv[5]);
    if (status == BACKLOT_OK) {
        uint8_t *data = NULL;
        size_t length = 0;
        status = backlot_contents(manager, argv[6], argv[5], &data, &length);
        if (status == BACKLOT_OK) {
            exit_status = fwrite(data, 1, length, stdout) == length ? 0 : 1;
            backlot_free(data);
        }
    }
    if (status != BACKLOT_OK)
        fprintf(stderr, "install_pack: %s: %s\n", backlot_status_name(status), backlot_last_error_message());
    backlot_manager_close(manager);
    return exit_status;
}
