# Writes drover's man page from its --help texts (run by the drover_man target):
#   cmake -DDROVER=path/to/drover -DOUT=drover.1 [-DHELP2MAN=path] -P manpage.cmake
# With help2man, it formats `drover --help` and `--version` and adds each command's help as a
# section; without it, this script writes the same sections in plain roff itself.
set(commands sim run emulate report)
set(sections "")
foreach(c ${commands})
  execute_process(COMMAND ${DROVER} help ${c} OUTPUT_VARIABLE text RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${DROVER} help ${c} failed (${rc})")
  endif()
  string(REPLACE "\\" "\\e" text "${text}")
  string(TOUPPER "${c}" upper)
  string(APPEND sections "[DROVER ${upper}]\n.nf\n${text}.fi\n\n")
endforeach()
string(APPEND sections "[FILES]\n.nf\n<prefix>/share/drover/data       measured profiles and traces\n"
       "<prefix>/share/drover/examples   example clusters, workloads and profiles\n"
       "<prefix>/share/doc/drover        README.md and docs/, the pages --help names\n.fi\n"
       "The data directory is found from --data-dir, then $DROVER_DATA_DIR, then next to the\n"
       "binary, then the installed one.\n")

if(HELP2MAN)
  set(inc ${OUT}.include)
  file(WRITE ${inc} "${sections}")
  execute_process(COMMAND ${HELP2MAN} --no-info --section=1 --include=${inc}
                          "--name=scheduler and elastic controller for distributed training jobs"
                          --output=${OUT} ${DROVER} RESULT_VARIABLE rc)
  file(REMOVE ${inc})
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "help2man failed (${rc})")
  endif()
  return()
endif()

execute_process(COMMAND ${DROVER} --help OUTPUT_VARIABLE main)
execute_process(COMMAND ${DROVER} version OUTPUT_VARIABLE version)
string(STRIP "${version}" version)
string(REPLACE "\\" "\\e" main "${main}")
string(REGEX REPLACE "\\[([A-Z ]+)\\]\n" ".SH \"\\1\"\n" sections "${sections}")
file(WRITE ${OUT} ".TH DROVER 1 \"\" \"${version}\" \"User Commands\"\n"
     ".SH NAME\ndrover \\- scheduler and elastic controller for distributed training jobs\n"
     ".SH DESCRIPTION\n.nf\n${main}.fi\n${sections}")
