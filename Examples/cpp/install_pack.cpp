/*
 * install_pack: installs one asset pack from a Backlot repository and writes one of its files to
 * standard output: the C example (Examples/c/install_pack.c) with the C++ wrapper, backlot.hpp.
 *
 *   g++ -std=c++17 install_pack.cpp $(pkg-config --cflags --libs backlot) -o install_pack
 *   ./install_pack CATALOG_URL ROOT_PUB CA_PEM|- CONTAINER PACK FILE > out
 *
 * Progress goes to standard error. Exit status: 0 when the file was written, 1 when libbacklot
 * refused or failed (its message on standard error), 2 for bad arguments.
 */
#include <backlot/backlot.hpp>

#include <cstdio>
#include <iostream>
#include <string>

int main(int argc, char **argv) {
    if (argc != 7) {
        std::cerr << "usage: install_pack CATALOG_URL ROOT_PUB CA_PEM|- CONTAINER PACK FILE\n";
        return 2;
    }
    const std::string pack = argv[5];
    try {
        backlot::config config;
        config.catalog_url = argv[1];
        config.trusted_key_path = argv[2];
        if (std::string(argv[3]) != "-") config.ca_path = argv[3];
        config.container_path = argv[4];

        backlot::manager manager(config);
        manager.ensure_local_availability(pack, [&pack](std::uint64_t completed, std::uint64_t total) {
            if (total > 0) std::cerr << pack << ": " << completed << " of " << total << " bytes\n";
        });
        const std::vector<std::uint8_t> data = manager.contents(argv[6], pack);
        if (std::fwrite(data.data(), 1, data.size(), stdout) != data.size() || std::fflush(stdout) != 0) {
            std::perror("install_pack: standard output");
            return 1;
        }
        return 0;
    } catch (const backlot::error &e) {
        std::cerr << "install_pack: " << e.name() << ": " << e.message() << "\n";
        return 1;
    }
}
