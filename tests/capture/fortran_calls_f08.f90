! fortran_calls_f08 — a small mpi_f08 program for libotfx-capture: most mpi_f08 routines of MPICH call
! PMPI_* directly, so the library wraps their entry points; this checks that the world is the
! application's (size, split, dup, a file opened and a graph built on MPI_COMM_WORLD), that the string
! and MPI_UNWEIGHTED arguments mean what they mean without the library, and that every call is counted
! exactly once. Prints "fortran: rank R of N", "check failed: ..." for each wrong result (and stops),
! and "expected-calls: R F=C ..." (sorted by name, as the C programs do).
!
!   fortran_calls_f08 [DIRECTORY]     (the file test's directory, default the working directory)
program fortran_calls_f08
  use mpi_f08
  implicit none
  integer, parameter :: max_names = 64
  character(len=40) :: names(max_names)
  integer :: counts(max_names), n_names = 0
  type(MPI_Comm) :: half, copy
  type(MPI_Request) :: requests(2)
  type(MPI_Status) :: status
  integer :: rank, size, right, left, token, received, total
  logical :: flag
  double precision :: started

  call MPI_Init(); call counted('MPI_Init')
  call MPI_Comm_rank(MPI_COMM_WORLD, rank); call counted('MPI_Comm_rank')
  call MPI_Comm_size(MPI_COMM_WORLD, size); call counted('MPI_Comm_size')
  started = MPI_Wtime(); call counted('MPI_Wtime')
  right = mod(rank + 1, size)
  left = mod(rank + size - 1, size)

  call MPI_Comm_split(MPI_COMM_WORLD, mod(rank, 2), rank, half); call counted('MPI_Comm_split')
  call MPI_Comm_dup(half, copy); call counted('MPI_Comm_dup')
  call MPI_Barrier(copy); call counted('MPI_Barrier')

  token = rank
  call MPI_Irecv(received, 1, MPI_INTEGER, left, 7, MPI_COMM_WORLD, requests(1)); call counted('MPI_Irecv')
  call MPI_Isend(token, 1, MPI_INTEGER, right, 7, MPI_COMM_WORLD, requests(2)); call counted('MPI_Isend')
  call MPI_Waitall(2, requests, MPI_STATUSES_IGNORE); call counted('MPI_Waitall')
  call check(received == left, 'wrong token from the left neighbour')

  call MPI_Sendrecv(token, 1, MPI_INTEGER, right, 8, received, 1, MPI_INTEGER, MPI_ANY_SOURCE, 8, &
                    MPI_COMM_WORLD, status); call counted('MPI_Sendrecv')
  call check(status%MPI_SOURCE == left, 'wrong source in the status')

  call MPI_Irecv(received, 1, MPI_INTEGER, left, 9, MPI_COMM_WORLD, requests(1)); call counted('MPI_Irecv')
  call MPI_Isend(token, 1, MPI_INTEGER, right, 9, MPI_COMM_WORLD, requests(2)); call counted('MPI_Isend')
  do
    call MPI_Test(requests(1), flag, status); call counted('MPI_Test')
    if (flag) exit
  end do
  call MPI_Waitall(1, requests(2:2), MPI_STATUSES_IGNORE); call counted('MPI_Waitall')

  call MPI_Allreduce(1, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD); call counted('MPI_Allreduce')
  call check(total == size, 'allreduce over the world is wrong')
  call MPI_Comm_free(copy); call counted('MPI_Comm_free')
  call MPI_Comm_free(half); call counted('MPI_Comm_free')

  call file_on_world()
  call object_names()
  call info_strings()
  call graph_on_world()
  call other_strings()

  print '(a,i0,a,i0)', 'fortran: rank ', rank, ' of ', size
  call counted('MPI_Finalize')
  call print_expected_calls()
  call MPI_Finalize()

contains

  subroutine counted(name)
    character(len=*), intent(in) :: name
    integer :: i
    do i = 1, n_names
      if (names(i) == name) then
        counts(i) = counts(i) + 1
        return
      end if
    end do
    if (n_names == max_names) error stop 'fortran_calls_f08: too many function names'
    n_names = n_names + 1
    names(n_names) = name
    counts(n_names) = 1
  end subroutine counted

  subroutine check(condition, what)
    logical, intent(in) :: condition
    character(len=*), intent(in) :: what
    if (condition) return
    print '(a,i0,a)', 'check failed: rank ', rank, ': '//what
    flush (6)
    error stop 1
  end subroutine check

  ! Sorted like strcmp: Fortran pads with blanks, which sort before every character of a name.
  subroutine print_expected_calls()
    character(len=4096) :: line
    character(len=40) :: name
    character(len=16) :: number
    integer :: i, j, count
    do i = 2, n_names
      name = names(i)
      count = counts(i)
      j = i - 1
      do while (j >= 1)
        if (names(j) <= name) exit
        names(j + 1) = names(j)
        counts(j + 1) = counts(j)
        j = j - 1
      end do
      names(j + 1) = name
      counts(j + 1) = count
    end do
    write (line, '(a,i0)') 'expected-calls: ', rank
    do i = 1, n_names
      write (number, '(i0)') counts(i)
      line = trim(line)//' '//trim(names(i))//'='//trim(number)
    end do
    print '(a)', trim(line)
    flush (6)
  end subroutine print_expected_calls

  ! MPI_File_open is collective over MPI_COMM_WORLD: with the places in it, it would hang. The name is
  ! passed with its trailing blanks, which MPI must not see (MPICH drops leading and trailing blanks of
  ! every input string, so do the set_name and info calls below).
  subroutine file_on_world()
    character(len=1024) :: path, directory
    character(len=MPI_MAX_DATAREP_STRING) :: datarep
    type(MPI_File) :: fh
    type(MPI_Datatype) :: etype, filetype
    integer(kind=MPI_OFFSET_KIND) :: disp
    integer :: owner, value, back, length
    call get_command_argument(1, directory, length)
    if (length == 0) directory = '.'
    owner = getpid()
    call MPI_Bcast(owner, 1, MPI_INTEGER, 0, MPI_COMM_WORLD); call counted('MPI_Bcast')
    write (path, '(a,a,i0,a)') trim(directory), '/fortran_calls_f08.', owner, '.dat'

    call MPI_File_open(MPI_COMM_WORLD, path, ior(MPI_MODE_CREATE, MPI_MODE_RDWR), MPI_INFO_NULL, fh)
    call counted('MPI_File_open')
    call check(fh /= MPI_FILE_NULL, 'MPI_File_open gave MPI_FILE_NULL')
    call MPI_File_set_view(fh, 0_MPI_OFFSET_KIND, MPI_INTEGER, MPI_INTEGER, 'native  ', MPI_INFO_NULL)
    call counted('MPI_File_set_view')
    value = 1000 + rank
    call MPI_File_write_at(fh, int(rank, MPI_OFFSET_KIND), value, 1, MPI_INTEGER, MPI_STATUS_IGNORE)
    call counted('MPI_File_write_at')
    back = -1
    call MPI_File_read_at(fh, int(rank, MPI_OFFSET_KIND), back, 1, MPI_INTEGER, MPI_STATUS_IGNORE)
    call counted('MPI_File_read_at')
    call check(back == value, 'the value read back from the file differs')
    datarep = repeat('x', len(datarep))
    call MPI_File_get_view(fh, disp, etype, filetype, datarep); call counted('MPI_File_get_view')
    call check(datarep == 'native', 'MPI_File_get_view: datarep is "'//trim(datarep)//'", not "native"')
    call check(disp == 0 .and. etype == MPI_INTEGER .and. filetype == MPI_INTEGER, &
               'MPI_File_get_view: wrong displacement or types')
    call MPI_File_close(fh); call counted('MPI_File_close')
    if (rank == 0) then
      call MPI_File_delete(path, MPI_INFO_NULL); call counted('MPI_File_delete')
      open (newunit=value, file=trim(path), status='old', iostat=length)
      call check(length /= 0, 'MPI_File_delete left '//trim(path)//' behind')
    end if
  end subroutine file_on_world

  subroutine object_names()
    type(MPI_Comm) :: named
    character(len=MPI_MAX_OBJECT_NAME) :: name
    integer :: length
    call MPI_Comm_dup(MPI_COMM_WORLD, named); call counted('MPI_Comm_dup')
    call MPI_Comm_set_name(named, '  otfx f08 world copy   '); call counted('MPI_Comm_set_name')
    name = repeat('x', len(name))
    call MPI_Comm_get_name(named, name, length); call counted('MPI_Comm_get_name')
    call check(name == 'otfx f08 world copy' .and. length == len('otfx f08 world copy') .and. &
               len_trim(name) == length, 'MPI_Comm_get_name: "'//trim(name)//'" (blank padded) not returned')
    call MPI_Comm_free(named); call counted('MPI_Comm_free')
  end subroutine object_names

  subroutine info_strings()
    type(MPI_Info) :: info
    character(len=64) :: value
    character(len=MPI_MAX_INFO_KEY) :: key
    integer :: length, nkeys
    logical :: found
    call MPI_Info_create(info); call counted('MPI_Info_create')
    call MPI_Info_set(info, ' otfx_key   ', '  some value   '); call counted('MPI_Info_set')
    call MPI_Info_get_valuelen(info, 'otfx_key', length, found); call counted('MPI_Info_get_valuelen')
    call check(found .and. length == 10, 'MPI_Info_get_valuelen: key not found or trailing blanks kept')
    value = repeat('x', len(value))
    call MPI_Info_get(info, 'otfx_key', 64, value, found); call counted('MPI_Info_get')
    call check(found .and. value == 'some value', 'MPI_Info_get: wrong value "'//trim(value)//'"')
    ! value is character(len=valuelen): MPICH writes exactly valuelen characters.
    value = repeat('x', len(value))
    call MPI_Info_get(info, 'otfx_key', 12, value, found); call counted('MPI_Info_get')
    call check(found .and. value(1:12) == 'some value' .and. value(13:) == repeat('x', len(value) - 12), &
               'MPI_Info_get with valuelen 12: "'//trim(value)//'"')
    value = repeat('x', len(value))
    call MPI_Info_get(info, 'no_such_key', 64, value, found); call counted('MPI_Info_get')
    call check(.not. found .and. value == repeat('x', len(value)), 'MPI_Info_get found a missing key')
    length = 0
    call MPI_Info_get_string(info, 'otfx_key', length, value, found); call counted('MPI_Info_get_string')
    call check(found .and. length == 10, 'MPI_Info_get_string: length query')
    length = len(value)
    call MPI_Info_get_string(info, 'otfx_key', length, value, found); call counted('MPI_Info_get_string')
    call check(found .and. length == 10 .and. value == 'some value', 'MPI_Info_get_string: wrong value')
    call MPI_Info_get_nkeys(info, nkeys); call counted('MPI_Info_get_nkeys')
    call check(nkeys == 1, 'MPI_Info_get_nkeys: not one key')
    key = repeat('x', len(key))
    call MPI_Info_get_nthkey(info, 0, key); call counted('MPI_Info_get_nthkey')
    call check(key == 'otfx_key', 'MPI_Info_get_nthkey: "'//trim(key)//'" (blank padded) not returned')
    call MPI_Info_delete(info, 'otfx_key '); call counted('MPI_Info_delete')
    call MPI_Info_get_nkeys(info, nkeys); call counted('MPI_Info_get_nkeys')
    call check(nkeys == 0, 'MPI_Info_delete did not delete the key')
    call MPI_Info_free(info); call counted('MPI_Info_free')
  end subroutine info_strings

  ! A ring on MPI_COMM_WORLD: with the places in it, the creation would hang or the ranks differ;
  ! MPI_UNWEIGHTED passed through as a Fortran address would make the graph weighted.
  subroutine graph_on_world()
    type(MPI_Comm) :: graph
    integer :: sources(1), destinations(1), indegree, outdegree
    logical :: weighted
    call MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, [left], MPI_UNWEIGHTED, 1, [right], MPI_UNWEIGHTED, &
                                        MPI_INFO_NULL, .false., graph)
    call counted('MPI_Dist_graph_create_adjacent')
    call MPI_Dist_graph_neighbors_count(graph, indegree, outdegree, weighted)
    call counted('MPI_Dist_graph_neighbors_count')
    call check(indegree == 1 .and. outdegree == 1 .and. .not. weighted, &
               'MPI_Dist_graph_create_adjacent: wrong degrees or weighted')
    sources = -1
    destinations = -1
    call MPI_Dist_graph_neighbors(graph, 1, sources, MPI_UNWEIGHTED, 1, destinations, MPI_UNWEIGHTED)
    call counted('MPI_Dist_graph_neighbors')
    call check(sources(1) == left .and. destinations(1) == right, &
               'MPI_Dist_graph_neighbors: not the application ranks of the ring')
    call MPI_Comm_free(graph); call counted('MPI_Comm_free')

    call MPI_Dist_graph_create(MPI_COMM_WORLD, 1, [rank], [1], [right], MPI_UNWEIGHTED, MPI_INFO_NULL, .false., &
                               graph)
    call counted('MPI_Dist_graph_create')
    call MPI_Dist_graph_neighbors_count(graph, indegree, outdegree, weighted)
    call counted('MPI_Dist_graph_neighbors_count')
    call check(indegree == 1 .and. outdegree == 1 .and. .not. weighted, &
               'MPI_Dist_graph_create: wrong degrees or weighted')
    call MPI_Comm_free(graph); call counted('MPI_Comm_free')
  end subroutine graph_on_world

  subroutine other_strings()
    character(len=MPI_MAX_PROCESSOR_NAME) :: processor
    character(len=MPI_MAX_ERROR_STRING) :: message
    character(len=MPI_MAX_LIBRARY_VERSION_STRING) :: version
    integer(kind=MPI_ADDRESS_KIND) :: bytes
    integer :: length
    processor = repeat('x', len(processor))
    call MPI_Get_processor_name(processor, length); call counted('MPI_Get_processor_name')
    call check(length > 0 .and. len_trim(processor) == length, 'MPI_Get_processor_name: length or blank padding wrong')
    message = repeat('x', len(message))
    call MPI_Error_string(MPI_ERR_TRUNCATE, message, length); call counted('MPI_Error_string')
    call check(length > 0 .and. len_trim(message) == length, 'MPI_Error_string: length or blank padding wrong')
    version = repeat('x', len(version))
    call MPI_Get_library_version(version, length); call counted('MPI_Get_library_version')
    call check(index(version, 'MPICH') == 1 .and. len_trim(version) <= length, &
               'MPI_Get_library_version: not an MPICH version')
    call MPI_Pack_external_size('external32   ', 3, MPI_INTEGER, bytes); call counted('MPI_Pack_external_size')
    call check(bytes == 12, 'MPI_Pack_external_size: 3 integers are not 12 bytes in external32')
  end subroutine other_strings

end program fortran_calls_f08
