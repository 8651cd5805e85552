# cmake -DHONE=path/to/hone -DOUT=dir -P cli_docs.cmake: the man page and shell completions,
# written by hone itself (app/CMakeLists.txt runs this after building hone).
file(MAKE_DIRECTORY ${OUT})
foreach(job "hone.1;--man" "hone.bash;completion;bash" "_hone;completion;zsh")
    list(POP_FRONT job file)
    execute_process(COMMAND ${HONE} ${job} OUTPUT_FILE ${OUT}/${file}.tmp RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
        message(FATAL_ERROR "${HONE} ${job} failed (${rc})")
    endif()
    file(RENAME ${OUT}/${file}.tmp ${OUT}/${file})
endforeach()
