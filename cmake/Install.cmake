# Installation: headers, libraries and flexgraphConfig.cmake for find_package(flexgraph).
