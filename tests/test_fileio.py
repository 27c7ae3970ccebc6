import os

import numpy as np
import pandas as pd
import pytest

from sdv_dpkme.domain import ColumnDomain
from sdv_dpkme.fileio import TableError, atomic_path, read_table, write_table

COLUMNS = {'id': {'sdtype': 'id'}, 'zip': {'sdtype': 'categorical'},
           'grade': {'sdtype': 'categorical'}, 'region': {'sdtype': 'categorical'},
           'ok': {'sdtype': 'boolean'}, 'fee': {'sdtype': 'numerical'},
           'joined': {'sdtype': 'datetime'}}
DOMAINS = {'grade': ColumnDomain('grade', 'categorical', categories=[1, 2, 3])}


def test_csv_dtypes_follow_the_metadata_not_the_values(tmp_path):
    path = tmp_path / 't.csv'
    path.write_text('id,zip,grade,region,ok,fee,joined\n'
                    '007,01234,2,NA,true,1,2020-01-01\n'
                    '008,99999,9,None,0,,2021-05-06\n')
    data = read_table(path, COLUMNS, DOMAINS)
    assert data['id'].tolist() == ['007', '008'] and data['zip'].tolist() == ['01234', '99999']
    # declared integer categories are matched; an undeclared value stays as read
    assert data['grade'].tolist() == [2, '9']
    assert data['region'].tolist() == ['NA', 'None']  # only an empty field is missing
    assert data['ok'].tolist() == [True, False]
    assert data['fee'].dtype == np.float64 and np.isnan(data['fee'][1])
    assert data['joined'].tolist() == ['2020-01-01', '2021-05-06']


def test_bad_cells_are_errors_that_name_the_column_not_the_value(tmp_path):
    path = tmp_path / 't.csv'
    path.write_text('fee,ok\nSECRET,true\n')
    with pytest.raises(TableError, match="'fee'.*row 1") as err:
        read_table(path, {'fee': {'sdtype': 'numerical'}})
    assert 'SECRET' not in str(err.value)
    path.write_text('fee,ok\n1,maybe\n')
    with pytest.raises(TableError, match="'ok'"):
        read_table(path, {'fee': {'sdtype': 'numerical'}, 'ok': {'sdtype': 'boolean'}})


def test_atomic_path_keeps_the_old_file_and_no_temporary_on_failure(tmp_path):
    target = tmp_path / 'out.csv'
    target.write_text('old')
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        with open(tmp, 'w') as f:
            f.write('half')
        raise RuntimeError('boom')
    assert target.read_text() == 'old' and os.listdir(tmp_path) == ['out.csv']
    write_table(pd.DataFrame({'a': [1]}), tmp_path / 'sub' / 'new.parquet')
    assert pd.read_parquet(tmp_path / 'sub' / 'new.parquet')['a'].tolist() == [1]
    assert oct(os.stat(tmp_path / 'sub' / 'new.parquet').st_mode & 0o777) != '0o600'


def test_a_table_that_cannot_be_read_says_why_without_its_contents(tmp_path):
    """The reader's message (here: the byte it could not decode) is private detail (issue 40)."""
    from sdv_dpkme import private_values_in_errors

    path = tmp_path / 'bad.csv'
    path.write_bytes(b'a,b\n1,2\n\xff\xfe,9\n')
    columns = {'a': {'sdtype': 'categorical'}, 'b': {'sdtype': 'categorical'}}
    with pytest.raises(TableError, match=r'as CSV \(UnicodeDecodeError\)') as caught:
        read_table(path, columns)
    assert '0xff' not in str(caught.value) and caught.value.__context__ is None
    with private_values_in_errors(), pytest.raises(TableError, match='0xff'):
        read_table(path, columns)
