# bsplib/spawn.cmake -- bsplib_spawn_self (bsplib/spawn.h): a program started
# without a launcher runs as pid 0 of a job of bspkrun --adopt.
# include()d by bsplib/CMakeLists.txt before it creates bspk_bsplib: spawn.cpp
# goes into the layer (BSPLIB_SOURCES) and into bspk_spawn, a static library
# for programs that use it without the layer (tests/spawn).
set(BSPK_SPAWN_SOURCE ${CMAKE_CURRENT_LIST_DIR}/spawn.cpp)
# Where bspkrun is when the program runs from the build tree (the installed
# layer finds <prefix>/bin/bspkrun next to its own lib/ first).
set_property(SOURCE ${BSPK_SPAWN_SOURCE} APPEND PROPERTY COMPILE_DEFINITIONS
             BSPKRUN_BUILD_PATH="$<TARGET_FILE:bspkrun>")

add_library(bspk_spawn STATIC ${BSPK_SPAWN_SOURCE})
set_target_properties(bspk_spawn PROPERTIES POSITION_INDEPENDENT_CODE ON
                                            CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
target_include_directories(bspk_spawn PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>)
target_link_libraries(bspk_spawn PUBLIC ${CMAKE_DL_LIBS})  # dladdr
add_dependencies(bspk_spawn bspkrun)

list(APPEND BSPLIB_SOURCES ${BSPK_SPAWN_SOURCE})
if(CMAKE_DL_LIBS)  # bspk_bsplib does not exist yet
  cmake_language(DEFER CALL target_link_libraries bspk_bsplib PRIVATE ${CMAKE_DL_LIBS})
endif()
